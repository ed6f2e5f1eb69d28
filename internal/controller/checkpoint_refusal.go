package controller

import (
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// The Checkpoints the manager creates for a Conversation (Scheduled, Compaction, Crash, Archive)
// count toward the namespace's ResourceQuota like anyone's. At a full quota, or under an
// admission policy that forbids them, the API server answers 403 Forbidden. No backoff mends
// that: the namespace's owner must see it and make room (delete Checkpoints, lower
// spec.checkpoints.keep, raise the quota). So the phase that was refused records it in the
// scope (checkpointRefused), goes on with what needs no Checkpoint, and looks again after
// checkpointRefusedRetry; settleCheckpointRefusal then reports it once per streak of refusals,
// on Degraded and in one Warning event, and clears it when a reconcile meets no refusal.

// DefaultCheckpointRefusedRetry is how long a phase whose Checkpoint the API server refused
// waits before trying again (nothing wakes it when room is made: another Conversation's
// Checkpoint may be the one deleted).
const DefaultCheckpointRefusedRetry = 30 * time.Second

// checkpointRefusal is the first Checkpoint the API server refused in a reconcile.
type checkpointRefusal struct {
	name   string
	reason parleyv1alpha1.CheckpointReason
	// why is the API server's message: it names the quota and the counts, no content.
	why string
}

func (c *checkpointRefusal) String() string {
	return fmt.Sprintf("the API server refused the %s Checkpoint %s: %s", c.reason, c.name, c.why)
}

func (r *ConversationReconciler) checkpointRefusedRetry() time.Duration {
	if r.CheckpointRefusedRetry > 0 {
		return r.CheckpointRefusedRetry
	}
	return DefaultCheckpointRefusedRetry
}

// checkpointRefused is the refusal err stands for when it is the API server refusing to
// create the Checkpoint name (nil otherwise); it is recorded in the scope, and the reconcile
// asks to look again later.
func (r *ConversationReconciler) checkpointRefused(s *conversationScope, name string, reason parleyv1alpha1.CheckpointReason, err error) *checkpointRefusal {
	refusal := refusalOf(name, reason, err)
	if refusal == nil {
		return nil
	}
	if s.checkpointRefused == nil {
		s.checkpointRefused = refusal
	}
	s.requeueAt(s.now.Add(r.checkpointRefusedRetry()))
	return refusal
}

// refusalOf is the refusal err stands for, nil when it is no 403 Forbidden.
func refusalOf(name string, reason parleyv1alpha1.CheckpointReason, err error) *checkpointRefusal {
	if !apierrors.IsForbidden(err) {
		return nil
	}
	why := err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		why = status.Status().Message
	}
	return &checkpointRefusal{name: name, reason: reason, why: why}
}

// settleCheckpointRefusal reports the reconcile's refusal: Degraded=True CheckpointRefused,
// and a Warning event when Degraded did not say so already (one per streak, not one per try).
// Degraded keeps another reason it holds (a mismatched session id, a failing compaction): then
// the event is all that says it, once per try. A reconcile that read the history (so ran the
// phases that create Checkpoints) or found the session expired, and met no refusal, clears it.
func settleCheckpointRefusal(s *conversationScope) {
	cond := s.condition(parleyv1alpha1.ConditionDegraded)
	free := cond == nil || cond.Status != metav1.ConditionTrue
	refusing := !free && cond.Reason == parleyv1alpha1.ReasonCheckpointRefused
	ref := s.checkpointRefused
	switch {
	case ref != nil:
		if !refusing {
			s.warning(parleyv1alpha1.EventCheckpointRefused, "Checkpoint", "%s", ref.String())
		}
		if free || refusing {
			next := "; tried again until it is admitted"
			if ref.reason == parleyv1alpha1.CheckpointCrash {
				next = "; the agent restarts without it"
			}
			s.setCondition(parleyv1alpha1.ConditionDegraded, metav1.ConditionTrue, parleyv1alpha1.ReasonCheckpointRefused,
				ref.String()+next+" (to make room: delete Checkpoints, lower spec.checkpoints.keep or raise the quota)")
		}
	case refusing && (s.summary != nil || s.expired):
		meta.RemoveStatusCondition(&s.status.Conditions, parleyv1alpha1.ConditionDegraded)
	}
}
