package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/lifecycle"
	"github.com/parley-dev/parley/pkg/history"
)

// conversationScope is what one reconcile knows: the object as read (never mutated), the time,
// the status being built, and what the phases decided to announce and when to look again.
// Phases read and fill it in order; the reconciler writes status.
type conversationScope struct {
	conv   *parleyv1alpha1.Conversation
	now    time.Time
	status parleyv1alpha1.ConversationStatus

	// expiry is when the session expires; expired says whether it has.
	expiry  lifecycle.Expiry
	expired bool

	// summary is what the history holds now, when it could be read this reconcile.
	summary *historySummary
	// summaryCurrent: status.history is this controller's own last summary and nothing has
	// written the object since (no activity patch, no activity handed over).
	summaryCurrent bool
	// viewHead, when set, is where this replica's own writes left the history, with nothing
	// else written since this controller's last reconcile: the shared view, when it stands
	// exactly there, is summarised without reading the store (session.ViewHeadToTrust).
	viewHead *history.Head

	// agentPod is the current agent pod, when the agent phase read one.
	agentPod *corev1.Pod
	// agentCrashed and agentFailed name a crash recorded and an agent given up on this
	// reconcile (counted in metrics once status is written).
	agentCrashed, agentFailed string
	// agentStarted is the cause of an agent pod created this reconcile, and restartedAfter the
	// time of the crash it replaces: counted once status is written too, so a reconcile that
	// read a stale Conversation, repeated the start (AlreadyExists) and lost the status write
	// counts nothing.
	agentStarted   agentStart
	restartedAfter time.Time
	// activityAt is the exact time of the activity handed off this reconcile: status keeps
	// whole seconds, which would make a wake look up to a second slower than it was.
	activityAt time.Time

	// checkpointRefused is the first Checkpoint the API server refused this reconcile
	// (settleCheckpointRefusal reports it).
	checkpointRefused *checkpointRefusal

	events []pendingEvent
	// historyCreated names where this reconcile created and initialised the history.
	historyCreated string
	requeue        time.Duration
	// retryErr, when set, makes the reconcile return an error after writing status, so the
	// workqueue retries with exponential backoff (a missing Secret, an unreachable store).
	retryErr error
}

// historySummary is the part of the history status reports and later phases use.
type historySummary struct {
	sequence    uint64
	epoch       uint64
	bytes       int64
	messages    int
	turns       int
	tokens      int
	initialized bool
	adapter     *parleyv1alpha1.AdapterState
	// lastMessageSeq is the sequence of the last message, the figure a Checkpoint's
	// status.sequence records (sequence also counts events, adapter reports and markers).
	lastMessageSeq uint64
	// reset describes the reset that wrote the current epoch, nil when none did.
	reset *journal.Reset
	// awaitsPerson: the agent waits for a person (journal.View.AwaitsPerson), the state an
	// idle agent is suspended in and a user message wakes it from.
	awaitsPerson bool
}

// pendingEvent is an event to emit once status is written.
type pendingEvent struct {
	warning bool
	reason  string
	action  string
	message string
}

func newConversationScope(conv *parleyv1alpha1.Conversation, now time.Time) *conversationScope {
	return &conversationScope{conv: conv, now: now, status: *conv.Status.DeepCopy()}
}

// withStatus is the one way to build the Conversation as read with the status being built (to
// open its history by the session id, render its bundle, write its status): a deep copy, so
// neither the copy nor whatever keeps it (a session.Live holds its Conversation) shares a
// slice or a pointer with the status the phases go on building, nor with the object as read.
func (s *conversationScope) withStatus() *parleyv1alpha1.Conversation {
	conv := s.conv.DeepCopy()
	conv.Status = *s.status.DeepCopy()
	return conv
}

// setCondition sets a condition of the status being built, stamped with the generation read.
func (s *conversationScope) setCondition(condType string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&s.status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: msg, ObservedGeneration: s.conv.Generation,
	})
}

// condition returns a condition of the status being built, or nil.
func (s *conversationScope) condition(condType string) *metav1.Condition {
	return meta.FindStatusCondition(s.status.Conditions, condType)
}

func (s *conversationScope) event(reason, action, format string, args ...any) {
	s.events = append(s.events, pendingEvent{reason: reason, action: action, message: fmt.Sprintf(format, args...)})
}

func (s *conversationScope) warning(reason, action, format string, args ...any) {
	s.events = append(s.events, pendingEvent{warning: true, reason: reason, action: action, message: fmt.Sprintf(format, args...)})
}

// requeueAt asks to look again at t (the earliest request wins; never negative).
func (s *conversationScope) requeueAt(t time.Time) {
	s.requeueAfter(lifecycle.RequeueAfter(s.now, t))
}

// requeueFrom is the delay to hand back to the workqueue when the reconcile returns at end:
// the workqueue counts RequeueAfter from then, and the phases decided it at s.now, so the
// reconcile's own duration (a status write under load, tens of milliseconds and more) would
// otherwise make every timer, an expiry's too, late by that much. Zero stays zero (no timer).
func (s *conversationScope) requeueFrom(end time.Time) time.Duration {
	if s.requeue == 0 {
		return 0
	}
	return max(s.requeue-end.Sub(s.now), time.Millisecond)
}

func (s *conversationScope) requeueAfter(d time.Duration) {
	if d < 0 {
		d = 0
	}
	if s.requeue == 0 || d < s.requeue {
		// Zero means "no request" for the merge, so a due timer asks for the smallest delay.
		s.requeue = max(d, time.Millisecond)
	}
}
