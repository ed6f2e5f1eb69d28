package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
)

// A history is named by its session id (historystore.Key), and spec.sessionID may pin one. Two
// live Conversations that pin the same id in the same store would share one history: an author
// allowed to read only their own Conversation would read the other's, or expire and delete it.
// So one of them keeps the history (see keepsHistoryBefore) and every
// other gets HistoryAvailable=False with reason HistoryKeyTaken: the controller never opens,
// expires or deletes the history for it, and the Session API, which serves only an available
// history, never opens it either.

// historySessionIndex indexes Conversations by the session id their history is, or will be,
// named by.
const historySessionIndex = "historySessionID"

// historyKeyRecheck is how often a Conversation refused for HistoryKeyTaken looks again: the
// Conversation that keeps the history may have been deleted.
const historyKeyRecheck = time.Minute

// historySessionID is the session id a Conversation's history is named by: status.sessionID
// once assigned, else the pinned spec.sessionID. Case-folded: UUIDs are admitted in any case.
func historySessionID(conv *parleyv1alpha1.Conversation) string {
	sid := conv.Status.SessionID
	if sid == "" {
		sid = conv.Spec.SessionID
	}
	return strings.ToLower(sid)
}

// historyPlace is where a Conversation's history lives, case-folded ("" before it has a session
// id). An objectStore's endpoint is left out: one store has many spellings (a host, a URL, an
// address), so the same bucket, prefix and session id count as the same place on any endpoint.
func historyPlace(conv *parleyv1alpha1.Conversation) string {
	sid := historySessionID(conv)
	if sid == "" {
		return ""
	}
	c := *conv
	c.Status.SessionID = sid
	return strings.ToLower(historystore.Location(&c))
}

// historyKeyHolder returns the Conversation among others that keeps the history conv's would
// share, or nil when conv keeps (or will keep) it itself.
func historyKeyHolder(conv *parleyv1alpha1.Conversation, others []parleyv1alpha1.Conversation) *parleyv1alpha1.Conversation {
	place := historyPlace(conv)
	if place == "" {
		return nil
	}
	var holder *parleyv1alpha1.Conversation
	for i := range others {
		o := &others[i]
		if o.UID == conv.UID || !keepsHistoryBefore(o, conv) || historyPlace(o) != place {
			continue
		}
		if holder == nil || keepsHistoryBefore(o, holder) {
			holder = o
		}
	}
	return holder
}

// keepsHistoryBefore orders the claims on one history. A session id the controller minted is
// its Conversation's own (derived from its UID, known to nobody before it exists): whoever pins
// it later claims another's history and never wins. Among pinned ids the earlier created wins;
// creation times have whole seconds, so within one second the Conversation that already holds
// the history keeps it (an author who copies a new id from status cannot take it over by
// racing in the same second with a name that sorts first), and only then the name decides.
func keepsHistoryBefore(a, b *parleyv1alpha1.Conversation) bool {
	if am, bm := mintedOwnID(a), mintedOwnID(b); am != bm {
		return am
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if ah, bh := holdsHistory(a), holdsHistory(b); ah != bh {
		return ah
	}
	return a.Name < b.Name
}

// mintedOwnID reports whether conv's session id was minted by the controller, not pinned.
func mintedOwnID(conv *parleyv1alpha1.Conversation) bool {
	return conv.Status.SessionID != "" && !strings.EqualFold(conv.Spec.SessionID, conv.Status.SessionID)
}

// holdsHistory reports whether conv has its history open (HistoryAvailable=True).
func holdsHistory(conv *parleyv1alpha1.Conversation) bool {
	return meta.IsStatusConditionTrue(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
}

// historyKeyHolderOf finds the live Conversation of conv's namespace that keeps the history
// conv's would share, or nil.
func (r *ConversationReconciler) historyKeyHolderOf(ctx context.Context, conv *parleyv1alpha1.Conversation) (*parleyv1alpha1.Conversation, error) {
	sid := historySessionID(conv)
	if sid == "" {
		return nil, nil
	}
	list := &parleyv1alpha1.ConversationList{}
	if err := r.List(ctx, list, client.InNamespace(conv.Namespace), client.MatchingFields{historySessionIndex: sid}); err != nil {
		return nil, fmt.Errorf("listing the Conversations of session %s in %s: %w", sid, conv.Namespace, err)
	}
	return historyKeyHolder(conv, list.Items), nil
}

// historyKeyTaken reports whether another live Conversation keeps the history this one's would
// share, and if so says so in HistoryAvailable and looks again later.
func (r *ConversationReconciler) historyKeyTaken(ctx context.Context, s *conversationScope) bool {
	conv := s.withStatus()
	holder, err := r.historyKeyHolderOf(ctx, conv)
	if err != nil {
		s.retryErr = err
		return true
	}
	if holder == nil {
		return false
	}
	msg := fmt.Sprintf("Conversation %s already keeps its history at %s (session id %s); this one never opens it. "+
		"Leave spec.sessionID out, or pin an id of its own", holder.Name, historystore.Location(conv), conv.Status.SessionID)
	if prev := s.condition(parleyv1alpha1.ConditionHistoryAvailable); prev == nil || prev.Reason != parleyv1alpha1.ReasonHistoryKeyTaken {
		s.warning(parleyv1alpha1.EventHistoryUnavailable, "Open", "%s", msg)
	}
	s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionFalse, parleyv1alpha1.ReasonHistoryKeyTaken, msg)
	s.requeueAfter(historyKeyRecheck)
	return true
}

// indexHistorySession is the field index of historySessionIndex.
func indexHistorySession(o client.Object) []string {
	if sid := historySessionID(o.(*parleyv1alpha1.Conversation)); sid != "" {
		return []string{sid}
	}
	return nil
}
