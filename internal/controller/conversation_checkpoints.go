package controller

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// LabelConversation marks a Checkpoint the controller created with its Conversation's name.
const LabelConversation = "parley.dev/conversation"

func archiveCheckpointName(conv string) string { return childName(conv, "archive") }

func turnCheckpointName(conv string, turn int) string {
	return childName(conv, "turn-"+strconv.Itoa(turn))
}

func intervalCheckpointName(conv string, k int64) string {
	return childName(conv, "at-"+strconv.FormatInt(k, 10))
}

// scheduledCheckpoint is one Checkpoint the policy asks for.
type scheduledCheckpoint struct {
	name string
	turn *int64
}

// checkpointPlan is what the checkpoint policy decided in one reconcile.
type checkpointPlan struct {
	create []scheduledCheckpoint
	// latest is the newest Ready Checkpoint of the session ("" when none).
	latest string
	// next is when the interval policy is due again (zero: no timer).
	next time.Time
	// existing and keep are what pruneAfter counts from.
	existing []parleyv1alpha1.Checkpoint
	keep     int
}

// pruneAfter is what to delete once created of plan.create were made (checkpointsPastKeep).
// Only the Checkpoints that exist count, never one that was to be created: when the API server
// refused a Checkpoint (a full ResourceQuota), the session keeps keep of those it has instead of
// losing one for a Checkpoint that was not made, and the ones past keep still go, which is
// what frees room under the quota.
func (p checkpointPlan) pruneAfter(created int) []string {
	return checkpointsPastKeep(p.existing, created, p.keep, p.latest)
}

// decideCheckpoints applies spec.checkpoints: a Checkpoint at every everyTurns-th turn (the
// latest such turn only, so a policy enabled late does not back-fill), one per interval while
// the history grows, and the oldest Checkpoints, whatever their reason, deleted past keep
// (checkpointsPastKeep; keep's default applies without spec.checkpoints too, since Crash and
// Compaction Checkpoints need no policy). existing are the session's Checkpoints; turns and
// sequence (of the last message) describe the history now.
func decideCheckpoints(conv *parleyv1alpha1.Conversation, existing []parleyv1alpha1.Checkpoint, now time.Time, turns int, sequence uint64) checkpointPlan {
	var plan checkpointPlan
	have := map[string]bool{}
	var newestReady *parleyv1alpha1.Checkpoint
	var lastIntervalSeq int64 = -1
	var lastIntervalAt time.Time
	for i := range existing {
		c := &existing[i]
		have[c.Name] = true
		if c.Spec.GetReason() == parleyv1alpha1.CheckpointScheduled && c.Spec.Turn == nil && c.CreationTimestamp.After(lastIntervalAt) {
			lastIntervalAt, lastIntervalSeq = c.CreationTimestamp.Time, c.Status.Sequence
		}
		if c.Status.Phase == parleyv1alpha1.CheckpointReady && (newestReady == nil || newer(c, newestReady)) {
			newestReady = c
		}
	}
	if newestReady != nil {
		plan.latest = newestReady.Name
	}
	if policy := conv.Spec.Checkpoints; policy != nil {
		if n := policy.EveryTurns; n != nil && *n > 0 {
			every := int(*n)
			if target := turns / every * every; target >= every && !have[turnCheckpointName(conv.Name, target)] {
				t := int64(target)
				plan.create = append(plan.create, scheduledCheckpoint{name: turnCheckpointName(conv.Name, target), turn: &t})
			}
		}
		if iv := policy.Interval; iv != nil && iv.Duration > 0 {
			k := int64(now.Sub(conv.CreationTimestamp.Time) / iv.Duration)
			// A checkpoint per interval, only when the history moved since the last one.
			if name := intervalCheckpointName(conv.Name, k); k >= 1 && !have[name] && int64(sequence) > lastIntervalSeq && sequence > 0 {
				plan.create = append(plan.create, scheduledCheckpoint{name: name})
			}
			plan.next = conv.CreationTimestamp.Add(time.Duration(k+1) * iv.Duration)
		}
	}
	plan.existing, plan.keep = existing, int(conv.Spec.Checkpoints.GetKeep())
	return plan
}

// checkpointsPastKeep are the Checkpoints to delete so that the session keeps keep of them once
// creating more are made: the oldest first, of every reason (each holds a stored snapshot,
// deleted with it by the snapshot finalizer). Two are never deleted: one still Pending (a
// snapshot being written, which a compaction or a fork may be waiting for) and latest, the
// newest Ready one (status.latestCheckpoint). So the count may stay above keep until they
// settle.
func checkpointsPastKeep(existing []parleyv1alpha1.Checkpoint, creating, keep int, latest string) []string {
	excess := len(existing) + creating - keep
	if excess <= 0 {
		return nil
	}
	oldest := make([]*parleyv1alpha1.Checkpoint, 0, len(existing))
	for i := range existing {
		oldest = append(oldest, &existing[i])
	}
	sort.Slice(oldest, func(i, j int) bool { return newer(oldest[j], oldest[i]) })
	var prune []string
	for _, c := range oldest {
		if len(prune) == excess {
			break
		}
		settled := c.Status.Phase == parleyv1alpha1.CheckpointReady || c.Status.Phase == parleyv1alpha1.CheckpointFailed
		if settled && c.Name != latest {
			prune = append(prune, c.Name)
		}
	}
	return prune
}

// newer orders Checkpoints by creation, then name (creation times have one-second resolution).
func newer(a, b *parleyv1alpha1.Checkpoint) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

// reconcileCheckpoints runs the checkpoint policy of a live session and records the newest
// Ready Checkpoint in status.
func (r *ConversationReconciler) reconcileCheckpoints(ctx context.Context, s *conversationScope) {
	existing, err := r.checkpointsOf(ctx, s.conv.Namespace, s.conv.Name, s.status.SessionID)
	if err != nil {
		s.retryErr = err
		return
	}
	turns, seq := 0, uint64(0)
	if s.summary != nil {
		// Compared with the interval Checkpoints' status.sequence: the last message's, not the
		// head's, or a trailing marker or adapter report would count as growth every interval.
		turns, seq = s.summary.turns, s.summary.lastMessageSeq
	}
	plan := decideCheckpoints(s.conv, existing, s.now, turns, seq)
	if plan.latest != "" && decideHistoryAction(s) != historyDone {
		s.status.LatestCheckpoint = plan.latest
	}
	if s.expired || s.summary == nil {
		return // nothing scheduled for a session that is over or whose history is unreadable
	}
	conv := s.withStatus()
	created := 0
	for _, c := range plan.create {
		err := r.createCheckpoint(ctx, conv, c.name, parleyv1alpha1.CheckpointScheduled, c.turn)
		if r.checkpointRefused(s, c.name, parleyv1alpha1.CheckpointScheduled, err) != nil {
			break
		}
		if err != nil {
			s.retryErr = err
			break
		}
		created++
		s.event(parleyv1alpha1.EventCheckpointCreated, "Checkpoint", "scheduled Checkpoint %s created", c.name)
	}
	for _, name := range plan.pruneAfter(created) {
		ckpt := &parleyv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Namespace: conv.Namespace, Name: name}}
		if err := r.Delete(ctx, ckpt); client.IgnoreNotFound(err) != nil {
			s.retryErr = err
			return
		}
		s.event(parleyv1alpha1.EventCheckpointPruned, "Prune", "Checkpoint %s deleted (checkpoints.keep)", name)
	}
	if !plan.next.IsZero() {
		s.requeueAt(plan.next)
	}
}

// checkpointsOf lists a session's Checkpoints from the cache (indexed by Conversation name).
// Checkpoints of an earlier session of the same name are left out.
func (r *ConversationReconciler) checkpointsOf(ctx context.Context, namespace, conv, sessionID string) ([]parleyv1alpha1.Checkpoint, error) {
	list := &parleyv1alpha1.CheckpointList{}
	if err := r.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{checkpointConversationIndex: conv}); err != nil {
		return nil, fmt.Errorf("listing Checkpoints of %s/%s: %w", namespace, conv, err)
	}
	out := list.Items[:0]
	for _, c := range list.Items {
		if c.DeletionTimestamp.IsZero() && (c.Status.SessionID == "" || c.Status.SessionID == sessionID) {
			out = append(out, c)
		}
	}
	return out, nil
}
