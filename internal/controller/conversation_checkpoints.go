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
	prune  []string
	// latest is the newest Ready Checkpoint of the session ("" when none).
	latest string
	// next is when the interval policy is due again (zero: no timer).
	next time.Time
}

// decideCheckpoints applies spec.checkpoints: a Checkpoint at every everyTurns-th turn (the
// latest such turn only, so a policy enabled late does not back-fill), one per interval while
// the history grows, and the oldest Scheduled ones deleted past keep. existing are the
// session's Checkpoints; turns and sequence (of the last message) describe the history now.
func decideCheckpoints(conv *parleyv1alpha1.Conversation, existing []parleyv1alpha1.Checkpoint, now time.Time, turns int, sequence uint64) checkpointPlan {
	var plan checkpointPlan
	have := map[string]bool{}
	var scheduled []parleyv1alpha1.Checkpoint
	var newestReady *parleyv1alpha1.Checkpoint
	var lastIntervalSeq int64 = -1
	var lastIntervalAt time.Time
	for i := range existing {
		c := &existing[i]
		have[c.Name] = true
		if c.Spec.Reason == parleyv1alpha1.CheckpointScheduled {
			scheduled = append(scheduled, *c)
			if c.Spec.Turn == nil && c.CreationTimestamp.After(lastIntervalAt) {
				lastIntervalAt, lastIntervalSeq = c.CreationTimestamp.Time, c.Status.Sequence
			}
		}
		if c.Status.Phase == parleyv1alpha1.CheckpointReady && (newestReady == nil || newer(c, newestReady)) {
			newestReady = c
		}
	}
	if newestReady != nil {
		plan.latest = newestReady.Name
	}
	policy := conv.Spec.Checkpoints
	if policy == nil {
		return plan
	}
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
	keep := int(policy.GetKeep())
	total := len(scheduled) + len(plan.create)
	if total > keep {
		sort.Slice(scheduled, func(i, j int) bool { return newer(&scheduled[j], &scheduled[i]) })
		for i := 0; i < total-keep && i < len(scheduled); i++ {
			plan.prune = append(plan.prune, scheduled[i].Name)
		}
	}
	return plan
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
	for _, c := range plan.create {
		if err := r.createCheckpoint(ctx, conv, c.name, parleyv1alpha1.CheckpointScheduled, c.turn); err != nil {
			s.retryErr = err
			return
		}
		s.event(parleyv1alpha1.EventCheckpointCreated, "Checkpoint", "scheduled Checkpoint %s created", c.name)
	}
	for _, name := range plan.prune {
		ckpt := &parleyv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Namespace: conv.Namespace, Name: name}}
		if err := r.Delete(ctx, ckpt); client.IgnoreNotFound(err) != nil {
			s.retryErr = err
			return
		}
		s.event(parleyv1alpha1.EventCheckpointPruned, "Prune", "scheduled Checkpoint %s deleted (checkpoints.keep)", name)
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
