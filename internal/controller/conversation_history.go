package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// retainedMessage is HistoryAvailable's message once an expired session's history is retained.
const retainedMessage = "the session expired; its history is retained (expirationPolicy Retain)"

// historyAction is what the history phase does in one reconcile.
type historyAction int

const (
	// historyKeep: open (creating and initialising when needed) and summarise the history.
	historyKeep historyAction = iota
	// historyReadOnly: the session expired with Retain: summarise, never create.
	historyReadOnly
	// historyRetained: expired with Retain, and status already holds the last summary: an
	// expired session takes no appends, so there is nothing new to read.
	historyRetained
	// historyDelete: expired with Delete and not yet deleted.
	historyDelete
	// historyArchive: expired with Archive and not yet archived.
	historyArchive
	// historyDone: the expiration policy already removed the live history.
	historyDone
)

// decideHistoryAction picks the history phase's work from the expiry and what status records
// of the policy: each policy step is recorded in HistoryAvailable's reason, so a restarted
// manager repeats only what is not done.
func decideHistoryAction(s *conversationScope) historyAction {
	if c := s.condition(parleyv1alpha1.ConditionHistoryAvailable); c != nil &&
		(c.Reason == parleyv1alpha1.ReasonHistoryDeleted || c.Reason == parleyv1alpha1.ReasonHistoryArchived) {
		return historyDone
	}
	if !s.expired {
		return historyKeep
	}
	switch s.conv.Spec.Lifetime.GetExpirationPolicy() {
	case parleyv1alpha1.ExpirationPolicyDelete:
		return historyDelete
	case parleyv1alpha1.ExpirationPolicyArchive:
		return historyArchive
	default:
		if summaryIsFinal(s) {
			return historyRetained
		}
		return historyReadOnly
	}
}

// summaryIsFinal: status.history is this controller's summary of a readable history and
// nothing has touched the object since. An expired session takes no appends, so its last
// summary stays right; activity from before the expiry still on its way (a patch, or a
// hand-off) writes the object or wakes a reconcile that takes it, and that one reads the store.
func summaryIsFinal(s *conversationScope) bool {
	c := s.condition(parleyv1alpha1.ConditionHistoryAvailable)
	return s.summaryCurrent && s.status.History != nil && c != nil && c.Status == metav1.ConditionTrue &&
		(c.Reason == parleyv1alpha1.ReasonHistoryReady || c.Reason == parleyv1alpha1.ReasonHistoryRetained)
}

// backendOf names a Conversation's backend for metrics.
func backendOf(conv *parleyv1alpha1.Conversation) string {
	if conv.Spec.History.ObjectStore != nil {
		return "s3"
	}
	return "configmap"
}

// reconcileHistory runs the history phase: open, initialise, summarise, or apply the expiration
// policy. Failures set HistoryAvailable=False with a reason and retry with backoff.
func (r *ConversationReconciler) reconcileHistory(ctx context.Context, s *conversationScope) {
	action := decideHistoryAction(s)
	if action == historyDone || r.historyKeyTaken(ctx, s) {
		return
	}
	if action != historyRetained {
		leave, err := enterHistoryIO(r.HistoryGate, s.conv)
		if err != nil {
			r.historyDeferred(s, err)
			return
		}
		defer leave()
	}
	switch action {
	case historyDelete:
		r.deleteHistory(ctx, s)
		return
	case historyArchive:
		r.archiveHistory(ctx, s)
		return
	case historyRetained:
		s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryRetained, retainedMessage)
	case historyReadOnly:
		r.openHistory(ctx, s, false)
	default:
		r.openHistory(ctx, s, true)
	}
}

// openHistory opens the history, initialises it once, and summarises it into status.
func (r *ConversationReconciler) openHistory(ctx context.Context, s *conversationScope, create bool) {
	conv := s.withStatus()
	live, err := r.Sessions.Open(ctx, conv, create)
	if err != nil {
		if !create && errors.Is(err, history.ErrNotFound) {
			return // expired before its history was ever created: nothing to summarise
		}
		r.historyFailed(s, err)
		return
	}
	var sum *historySummary
	if head, ok := history.JustCreated(live.History()); ok && create {
		sum, err = summariseEmpty(live, head)
	} else {
		sum, err = summarise(ctx, live, s.viewHead)
	}
	if err == nil && !sum.initialized {
		if !create {
			return
		}
		sum, err = r.initialise(ctx, s, conv, live)
	}
	if err != nil {
		r.historyFailed(s, err)
		return
	}
	s.summary = sum
	if prev := s.status.History; sum.reset != nil && prev != nil && uint64(prev.Epoch) < sum.epoch {
		s.event(parleyv1alpha1.EventHistoryReset, "Reset", "the history was reset into epoch %d: %d messages cleared, %d kept; Checkpoint %s holds the history before",
			sum.epoch, sum.reset.Cleared, sum.reset.Kept, sum.reset.Checkpoint)
	}
	s.status.History = &parleyv1alpha1.HistoryStatus{
		Messages: int64(sum.messages), Turns: int64(sum.turns), Bytes: sum.bytes,
		Sequence: int64(sum.sequence), Epoch: int64(sum.epoch), Location: historystore.Location(conv),
	}
	s.status.Context = contextStatus(conv.Spec.Context.MaxTokens, sum.tokens)
	if sum.adapter != nil {
		s.status.AdapterState = sum.adapter
	}
	reason, msg := parleyv1alpha1.ReasonHistoryReady, fmt.Sprintf("history at %s: %d messages", s.status.History.Location, sum.messages)
	if s.expired {
		reason, msg = parleyv1alpha1.ReasonHistoryRetained, retainedMessage
	}
	s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionTrue, reason, msg)
}

// contextStatus reports context-window usage; without maxTokens only the count is known.
func contextStatus(maxTokens *int64, tokens int) *parleyv1alpha1.ContextStatus {
	cs := &parleyv1alpha1.ContextStatus{Tokens: int64(tokens)}
	if maxTokens != nil && *maxTokens > 0 {
		cs.Limit = *maxTokens
		cs.Percent = int32(min(int64(tokens)*100 / *maxTokens, 1<<30))
	}
	return cs
}

// summarise brings the cached view of the history up to date and reads its figures. With
// viewHead (scope.viewHead) and the view standing there or past it (this replica's later
// appends, folded in), the view is read as it is, without a read of the store.
func summarise(ctx context.Context, live *session.Live, viewHead *history.Head) (*historySummary, error) {
	var sum *historySummary
	if viewHead != nil {
		atHead, err := live.Reached(*viewHead, func(v *journal.View) error { sum = summaryOf(v); return nil })
		if err != nil || atHead {
			return sum, err
		}
	}
	err := live.With(ctx, func(v *journal.View) error {
		sum = summaryOf(v)
		return nil
	})
	return sum, err
}

// summariseEmpty summarises a history that Open just created, without reading it: the held
// view starts empty at its head, and initialise's append then folds onto it. Should another
// writer have appended meanwhile, that append's answer shows it and the summary reads the store.
func summariseEmpty(live *session.Live, head history.Head) (*historySummary, error) {
	if err := live.Seed(head.Epoch, nil, nil); err != nil {
		return nil, err
	}
	sum := &historySummary{epoch: head.Epoch}
	if _, err := live.Fold(nil, history.Appended{Head: head},
		func(v *journal.View) error { sum = summaryOf(v); return nil }); err != nil {
		return nil, err
	}
	return sum, nil
}

// summaryOf reads a view's figures.
func summaryOf(v *journal.View) *historySummary {
	sum := &historySummary{
		sequence: v.Sequence, epoch: v.Epoch, bytes: v.Bytes, messages: v.Messages(), turns: v.Turns,
		tokens: v.Tokens(), initialized: v.Initialized, adapter: latestAdapter(v.State.Adapters),
		awaitsPerson: v.AwaitsPerson(),
	}
	if n := len(v.State.Messages); n > 0 {
		sum.lastMessageSeq = uint64(v.State.Messages[n-1].Seq)
	}
	if v.LastReset != nil {
		rs := *v.LastReset
		sum.reset = &rs
	}
	return sum
}

// latestAdapter converts the latest adapter state to its API form; none when its type or
// session id is longer than the API holds (an agent reports them, and one such value would make
// every status write of the Conversation, or of a Checkpoint, invalid).
func latestAdapter(states conversation.AdapterStates) *parleyv1alpha1.AdapterState {
	if len(states) == 0 {
		return nil
	}
	st := states[len(states)-1]
	if !parleyv1alpha1.AdapterStateFits(st.Type(), st.Session()) {
		return nil
	}
	return &parleyv1alpha1.AdapterState{Type: st.Type(), SessionID: st.Session(), Resumable: st.Resumable()}
}

// initialise writes the system prompt, the seed or the forked snapshot, then the initialised
// marker, and summarises the history after them. Every record id is derived from its content's
// own id, so a manager that died half-way repeats the same appends and each lands once.
func (r *ConversationReconciler) initialise(ctx context.Context, s *conversationScope, conv *parleyv1alpha1.Conversation, live *session.Live) (*historySummary, error) {
	records, what, err := r.initRecords(ctx, conv)
	if err != nil {
		return nil, err
	}
	marker, err := journal.InitializedRecord()
	if err != nil {
		return nil, err
	}
	records = append(records, marker)
	appended, err := journal.AppendAll(ctx, live.History(), records)
	if err != nil {
		return nil, err
	}
	sum, err := summariseAppended(ctx, live, records, appended)
	if err != nil {
		return nil, err
	}
	metrics.HistoriesCreated.WithLabelValues(backendOf(conv)).Inc()
	switch what {
	case "fork":
		s.event(parleyv1alpha1.EventForked, "Fork", "history started from Checkpoint %s (%d records)", conv.Spec.ForkFrom.Checkpoint, len(records))
	case "seed":
		s.event(parleyv1alpha1.EventSeedImported, "Import", "seed %s/%s imported (%d records)",
			conv.Spec.Seed.ConfigMapKeyRef.Name, conv.Spec.Seed.ConfigMapKeyRef.Key, len(records))
	}
	s.historyCreated = historystore.Location(conv)
	return sum, nil
}

// summariseAppended summarises the history after records this reconcile appended: the held
// view learns them from here, not by reading them back, and when the append's answer shows no
// other writer in between, the summary needs no read of the head either.
func summariseAppended(ctx context.Context, live *session.Live, records []history.Record, appended history.Appended) (*historySummary, error) {
	var sum *historySummary
	atHead, err := live.Fold(records, appended, func(v *journal.View) error { sum = summaryOf(v); return nil })
	if err != nil || atHead {
		return sum, err
	}
	return summarise(ctx, live, nil)
}

// initRecords gathers what initialisation writes: a fork's snapshot, or the system prompt and
// the seed. It reads referenced objects from the API server (no cluster-wide ConfigMap cache).
func (r *ConversationReconciler) initRecords(ctx context.Context, conv *parleyv1alpha1.Conversation) ([]history.Record, string, error) {
	if conv.Spec.ForkFrom != nil {
		state, err := r.forkedState(ctx, conv)
		if err != nil {
			return nil, "", err
		}
		records, err := journal.StateRecords(&state, "fork:")
		return records, "fork", err
	}
	var records []history.Record
	if sp := conv.Spec.SystemPrompt; sp != nil {
		text := sp.Text
		if sp.ConfigMapKeyRef != nil {
			var err error
			if text, err = r.configMapValue(ctx, conv.Namespace, *sp.ConfigMapKeyRef, "spec.systemPrompt.configMapKeyRef"); err != nil {
				return nil, "", err
			}
		}
		rec, err := journal.SystemRecord(text)
		if err != nil {
			return nil, "", err
		}
		records = append(records, rec)
	}
	if seed := conv.Spec.Seed; seed != nil {
		data, err := r.configMapValue(ctx, conv.Namespace, seed.ConfigMapKeyRef, "spec.seed.configMapKeyRef")
		if err != nil {
			return nil, "", err
		}
		state, format, err := journal.ParseSeed([]byte(data), seed.GetFormat())
		if err != nil {
			return nil, "", &historystore.Error{
				Reason:  parleyv1alpha1.ReasonSeedInvalid,
				Message: fmt.Sprintf("seed %s/%s (format %s) cannot be read; fix the ConfigMap", seed.ConfigMapKeyRef.Name, seed.ConfigMapKeyRef.Key, format), Err: err,
			}
		}
		if conv.Spec.SystemPrompt != nil {
			state.System = nil // spec.systemPrompt wins over a system line of the seed
		}
		seedRecords, err := journal.StateRecords(&state, "seed:")
		if err != nil {
			return nil, "", err
		}
		return append(records, seedRecords...), "seed", nil
	}
	return records, "", nil
}

// configMapValue reads one key of a ConfigMap, with errors that name the field to fix.
func (r *ConversationReconciler) configMapValue(ctx context.Context, namespace string, ref parleyv1alpha1.ConfigMapKeyReference, field string) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return "", &historystore.Error{
				Reason:  parleyv1alpha1.ReasonConfigMapNotFound,
				Message: fmt.Sprintf("ConfigMap %s/%s (%s) does not exist", namespace, ref.Name, field),
			}
		}
		return "", &historystore.Error{
			Reason:  parleyv1alpha1.ReasonStoreUnavailable,
			Message: fmt.Sprintf("reading ConfigMap %s/%s (%s)", namespace, ref.Name, field), Err: err,
		}
	}
	if v, ok := cm.Data[ref.Key]; ok {
		return v, nil
	}
	if v, ok := cm.BinaryData[ref.Key]; ok {
		return string(v), nil
	}
	return "", &historystore.Error{
		Reason:  parleyv1alpha1.ReasonConfigMapKeyNotFound,
		Message: fmt.Sprintf("ConfigMap %s/%s (%s) has no key %q", namespace, ref.Name, field, ref.Key),
	}
}

// lastingHistoryRecheck is how soon a history that failed for a lasting cause (corrupt or
// hostile bytes, the size cap) is looked at again when nothing else changes; a spec change
// brings the next reconcile sooner.
const lastingHistoryRecheck = 5 * time.Minute

// busyHistoryRecheck is how soon a history is read again when this replica's decode budget
// was taken by other reads: the reads ahead of it end within seconds.
const busyHistoryRecheck = 5 * time.Second

// historyDeferred records a read put off for want of room on this replica (readPutOff): its
// part of the decode budget, or a slot of its namespace's history I/O. Nothing is known to be
// wrong with the history, so its conditions stay as they are; a Warning event says why it was
// not read, and it is read again after busyHistoryRecheck (the workqueue's backoff would start
// at milliseconds, each try waiting on the same budget or finding the same slots taken).
func (r *ConversationReconciler) historyDeferred(s *conversationScope, cause error) {
	reason, msg := putOff(cause)
	s.warning(parleyv1alpha1.EventHistoryReadDeferred, "Read", "%s", msg)
	metrics.StoreErrors.WithLabelValues(backendOf(s.conv), reason).Inc()
	s.requeueAfter(busyHistoryRecheck)
}

// historyFailed records a failure to reach or initialise the history: HistoryAvailable=False
// with the cause's reason, a Warning event when the reason changes, and a retry with backoff,
// or, for a lasting cause, a look again after lastingHistoryRecheck: the workqueue's backoff
// starts at milliseconds, and each try would read the same hostile bytes again. A permanent
// cause is not retried at all: only a change of the spec mends it.
func (r *ConversationReconciler) historyFailed(s *conversationScope, err error) {
	if readPutOff(err) {
		r.historyDeferred(s, err)
		return
	}
	reason, msg := historystore.Reason(err), historystore.Message(err)
	prev := s.condition(parleyv1alpha1.ConditionHistoryAvailable)
	if prev == nil || prev.Reason != reason || prev.Status != metav1.ConditionFalse {
		s.warning(parleyv1alpha1.EventHistoryUnavailable, "Open", "%s", msg)
	}
	metrics.StoreErrors.WithLabelValues(backendOf(s.conv), reason).Inc()
	s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionFalse, reason, msg)
	if historystore.Permanent(err) {
		return // until the spec changes: the condition and the event say why
	}
	if historystore.Lasting(err) {
		s.requeueAfter(lastingHistoryRecheck)
		return
	}
	s.retryErr = fmt.Errorf("history of %s/%s: %s: %w", s.conv.Namespace, s.conv.Name, reason, err)
}
