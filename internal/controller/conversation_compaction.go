package controller

import (
	"context"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/compaction"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/conversation/compact"
)

// Compactor runs compactions off the reconcile path (compaction.Runner): the phase asks, the
// runner works and wakes the reconcile when it is done.
type Compactor interface {
	Request(req compaction.Request)
	Outcome(key types.NamespacedName) (compaction.Outcome, bool)
}

// compactionTrigger is what the due decision found.
type compactionTrigger int

const (
	// compactionIdle: nothing to decide (no readable history, expired).
	compactionIdle compactionTrigger = iota
	// compactionOff: strategy None, or no maxTokens to compact against.
	compactionOff
	// compactionNotDue: below compactAtPercent and not requested.
	compactionNotDue
	// compactionThreshold: the context reached compactAtPercent of maxTokens.
	compactionThreshold
	// compactionRequested: parley.dev/compact-requested-at is newer than the last compaction.
	compactionRequested
)

// decideCompaction is the due decision: the context reached compactAtPercent of maxTokens
// (compact.Due over the tokens the history phase counted), or the annotation asks for a
// compaction newer than status.lastCompaction and at least minInterval after it (the same
// bound the Session API puts on POST …/compact, for whoever sets the annotation directly: each
// forced compaction costs a Checkpoint and, with Summarize, a paid model call). A request that
// comes too soon waits for the interval. Never for strategy None or without maxTokens.
func decideCompaction(s *conversationScope, minInterval time.Duration) compactionTrigger {
	if s.summary == nil || s.expired || decideHistoryAction(s) != historyKeep {
		return compactionIdle
	}
	spec := s.conv.Spec.Context
	if spec.Strategy == parleyv1alpha1.CompactionNone || spec.MaxTokens == nil || *spec.MaxTokens <= 0 {
		return compactionOff
	}
	if at, ok := compactionRequestedAt(s.conv); ok {
		last := s.status.LastCompaction
		// status keeps whole seconds: a request within the second of the last compaction
		// is that compaction's.
		if last == nil || last.Time == nil || at.Truncate(time.Second).After(last.Time.Time) {
			var next time.Time
			if minInterval > 0 && last != nil && last.Time != nil {
				next = last.Time.Add(minInterval)
			}
			if !s.now.Before(next) {
				return compactionRequested
			}
			s.requeueAfter(next.Sub(s.now))
		}
	}
	if compact.Due(s.summary.tokens, int(*spec.MaxTokens), int(spec.GetCompactAtPercent())) {
		return compactionThreshold
	}
	return compactionNotDue
}

// compactionRequestedAt parses the annotation; an unparsable value is no request.
func compactionRequestedAt(conv *parleyv1alpha1.Conversation) (time.Time, bool) {
	v, ok := conv.Annotations[parleyv1alpha1.AnnotationCompactRequestedAt]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

// compactionCheckpointName is the Compaction Checkpoint of an epoch: deterministic, so a
// restarted manager finds the one it created.
func compactionCheckpointName(conv string, epoch uint64) string {
	return childName(conv, "compact-e"+strconv.FormatUint(epoch, 10))
}

// lastCompactionStatus is status.lastCompaction for the compaction that wrote an epoch.
func lastCompactionStatus(c *journal.Compaction) *parleyv1alpha1.CompactionRecord {
	t := metav1.NewTime(c.Time.Truncate(time.Second))
	return &parleyv1alpha1.CompactionRecord{
		Time: &t, Strategy: parleyv1alpha1.CompactionStrategy(c.Strategy), TokensBefore: int64(c.TokensBefore),
		TokensAfter: int64(c.TokensAfter), MessagesFolded: int64(c.MessagesFolded), Checkpoint: c.Checkpoint,
	}
}

// reconcileCompaction runs the compaction phase: record the compaction that wrote the current
// epoch (the view read it from the epoch's first record), decide whether another is due, take
// the epoch's Compaction Checkpoint, and hand the work to the Compactor once it is Ready.
func (r *ConversationReconciler) reconcileCompaction(ctx context.Context, s *conversationScope) {
	if r.Compactor == nil || s.summary == nil {
		return
	}
	conv := s.withStatus()
	live, err := r.Sessions.Of(conv)
	if err != nil {
		return
	}
	var done *journal.Compaction
	live.Peek(func(v *journal.View) {
		if v.Epoch == s.summary.epoch && v.LastCompaction != nil {
			c := *v.LastCompaction
			done = &c
		}
	})
	if done != nil {
		lc := lastCompactionStatus(done)
		if prev := s.status.LastCompaction; prev == nil || prev.Time == nil || !prev.Time.Equal(lc.Time) {
			s.event(parleyv1alpha1.EventCompacted, "Compact", "%s compacted epoch %d: %d -> %d tokens, %d messages folded; Checkpoint %s holds the history before",
				done.Strategy, done.FromEpoch, done.TokensBefore, done.TokensAfter, done.MessagesFolded, done.Checkpoint)
		}
		s.status.LastCompaction = lc
	}

	nn := types.NamespacedName{Namespace: conv.Namespace, Name: conv.Name}
	outcome, hasOutcome := r.Compactor.Outcome(nn)
	trigger := decideCompaction(s, r.MinForcedCompactionInterval)
	switch trigger {
	case compactionIdle:
		return
	case compactionOff:
		// A condition that does not apply is left out: it would say nothing and cost every
		// status write (see ConditionCompacting).
		meta.RemoveStatusCondition(&s.status.Conditions, parleyv1alpha1.ConditionCompacting)
		clearCompactionDegraded(s)
		return
	case compactionNotDue:
		reason, msg := parleyv1alpha1.ReasonNotDue, fmt.Sprintf("context at %d%% of maxTokens, compaction at %d%%", s.status.Context.Percent, s.conv.Spec.Context.GetCompactAtPercent())
		if done != nil {
			reason = parleyv1alpha1.ReasonCompacted
			msg = fmt.Sprintf("epoch %d written by %s (%d -> %d tokens); ", s.summary.epoch, done.Strategy, done.TokensBefore, done.TokensAfter) + msg
		}
		s.setCondition(parleyv1alpha1.ConditionCompacting, metav1.ConditionFalse, reason, msg)
		clearCompactionDegraded(s)
		return
	}

	epoch := s.summary.epoch
	ckpt, ready := r.compactionCheckpoint(ctx, s, conv, epoch)
	if !ready {
		return
	}
	req := compaction.Request{
		Conversation: nn, Epoch: epoch, Sequence: s.summary.sequence,
		Checkpoint: ckpt.Name, CheckpointSequence: ckpt.Status.Sequence,
		Force: trigger == compactionRequested,
	}
	mine := hasOutcome && outcome.Request.Epoch == epoch
	if mine && outcome.Request.Checkpoint == ckpt.Name && outcome.Request.CheckpointSequence == ckpt.Status.Sequence {
		switch outcome.Result {
		case compaction.ResultStaleCheckpoint:
			// More messages arrived after the Checkpoint than the strategy keeps: take a new
			// one, so the Checkpoint holds everything the compaction folds.
			if err := r.Delete(ctx, ckpt, client.Preconditions{UID: &ckpt.UID}); client.IgnoreNotFound(err) != nil {
				s.retryErr = err
				return
			}
			s.setCondition(parleyv1alpha1.ConditionCompacting, metav1.ConditionTrue, parleyv1alpha1.ReasonWaitingForCheckpoint,
				fmt.Sprintf("Checkpoint %s is older than the messages to fold; taking a new one", ckpt.Name))
			return
		case compaction.ResultNothingToCompact:
			if outcome.Request.Sequence == req.Sequence && outcome.Request.Force == req.Force {
				s.setCondition(parleyv1alpha1.ConditionCompacting, metav1.ConditionFalse, parleyv1alpha1.ReasonNothingToCompact,
					fmt.Sprintf("%s found nothing to fold in epoch %d (keepRecentMessages %d, tool calls kept with their results)",
						compaction.Strategy(&s.conv.Spec.Context), epoch, s.conv.Spec.Context.GetKeepRecentMessages()))
				clearCompactionDegraded(s)
				return
			}
		}
	}
	r.Compactor.Request(req)

	if mine && outcome.Result == compaction.ResultFailed {
		if c := s.condition(parleyv1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionTrue || c.Reason != outcome.Reason {
			s.warning(parleyv1alpha1.EventCompactionFailed, "Compact", "compaction of epoch %d failed (history untouched, retrying with backoff): %s", epoch, outcome.Message)
		}
		if c := s.condition(parleyv1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionTrue || isCompactionReason(c.Reason) {
			s.setCondition(parleyv1alpha1.ConditionDegraded, metav1.ConditionTrue, outcome.Reason,
				fmt.Sprintf("compaction of epoch %d failed %d times; the history is untouched and the compaction is retried with backoff: %s",
					epoch, outcome.Failures, outcome.Message))
		}
		s.setCondition(parleyv1alpha1.ConditionCompacting, metav1.ConditionTrue, parleyv1alpha1.ReasonCompactionRetrying,
			fmt.Sprintf("attempt %d failed: %s", outcome.Failures, outcome.Message))
		return
	}
	clearCompactionDegraded(s)
	reason, msg := parleyv1alpha1.ReasonThresholdReached, fmt.Sprintf("context at %d%% of maxTokens (compaction at %d%%)", s.status.Context.Percent, s.conv.Spec.Context.GetCompactAtPercent())
	if trigger == compactionRequested {
		reason, msg = parleyv1alpha1.ReasonCompactionRequested, "requested by "+parleyv1alpha1.AnnotationCompactRequestedAt
	}
	s.setCondition(parleyv1alpha1.ConditionCompacting, metav1.ConditionTrue, reason,
		fmt.Sprintf("%s; compacting epoch %d with %s (Checkpoint %s)", msg, epoch, compaction.Strategy(&s.conv.Spec.Context), ckpt.Name))
}

// compactionCheckpoint creates the epoch's Compaction Checkpoint when it is missing and
// reports whether it is Ready; until then it says what it waits for.
func (r *ConversationReconciler) compactionCheckpoint(ctx context.Context, s *conversationScope, conv *parleyv1alpha1.Conversation, epoch uint64) (*parleyv1alpha1.Checkpoint, bool) {
	name := compactionCheckpointName(conv.Name, epoch)
	waiting := func(msg string) {
		s.setCondition(parleyv1alpha1.ConditionCompacting, metav1.ConditionTrue, parleyv1alpha1.ReasonWaitingForCheckpoint, msg)
	}
	ckpt := &parleyv1alpha1.Checkpoint{}
	err := r.Get(ctx, types.NamespacedName{Namespace: conv.Namespace, Name: name}, ckpt)
	switch {
	case apierrors.IsNotFound(err):
		err := r.createCheckpoint(ctx, conv, name, parleyv1alpha1.CheckpointCompaction, nil)
		if ref := r.checkpointRefused(s, name, parleyv1alpha1.CheckpointCompaction, err); ref != nil {
			waiting(fmt.Sprintf("compaction due; waiting for room for Checkpoint %s: %s", name, ref.why))
			return nil, false
		}
		if err != nil {
			s.retryErr = err
			return nil, false
		}
		s.event(parleyv1alpha1.EventCheckpointCreated, "Checkpoint", "Compaction Checkpoint %s created before compacting epoch %d", name, epoch)
		waiting(fmt.Sprintf("compaction due; waiting for Checkpoint %s", name))
		return nil, false
	case err != nil:
		s.retryErr = fmt.Errorf("reading Checkpoint %s/%s: %w", conv.Namespace, name, err)
		return nil, false
	case !ckpt.DeletionTimestamp.IsZero():
		waiting(fmt.Sprintf("Checkpoint %s is being replaced", name))
		return nil, false
	case ckpt.Status.Phase != parleyv1alpha1.CheckpointReady:
		msg := fmt.Sprintf("compaction due; waiting for Checkpoint %s", name)
		if c := meta.FindStatusCondition(ckpt.Status.Conditions, parleyv1alpha1.ConditionReady); c != nil && c.Message != "" {
			msg += ": " + c.Message
		}
		waiting(msg)
		return nil, false
	}
	return ckpt, true
}

func isCompactionReason(reason string) bool {
	return reason == parleyv1alpha1.ReasonSummarizerUnavailable || reason == parleyv1alpha1.ReasonCompactionFailed
}

// clearCompactionDegraded removes Degraded when compaction set it.
func clearCompactionDegraded(s *conversationScope) {
	if c := s.condition(parleyv1alpha1.ConditionDegraded); c != nil && isCompactionReason(c.Reason) {
		meta.RemoveStatusCondition(&s.status.Conditions, parleyv1alpha1.ConditionDegraded)
	}
}
