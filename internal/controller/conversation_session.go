package controller

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// decideSession assigns the session id: spec.sessionID, or a fresh one. It reports whether the
// id was assigned just now. A session id, once in status, never changes: the history is keyed
// by it.
func decideSession(s *conversationScope, newSessionID func() string) (minted bool) {
	st := &s.status
	if st.SessionID == "" {
		if s.conv.Spec.SessionID != "" {
			st.SessionID = s.conv.Spec.SessionID
		} else {
			st.SessionID = newSessionID()
		}
		minted = true
	}
	// spec.sessionID may be added after the controller minted one (the API allows pinning it
	// later). The running session keeps its id; say so instead of ignoring the spec silently.
	if pinned := s.conv.Spec.SessionID; pinned != "" && pinned != st.SessionID {
		s.setCondition(parleyv1alpha1.ConditionDegraded, metav1.ConditionTrue, parleyv1alpha1.ReasonSessionIDMismatch,
			fmt.Sprintf("spec.sessionID %s was set after the session started as %s; the session keeps %s. "+
				"To use another id, create a new Conversation", pinned, st.SessionID, st.SessionID))
	} else if c := s.condition(parleyv1alpha1.ConditionDegraded); c != nil && c.Reason == parleyv1alpha1.ReasonSessionIDMismatch {
		meta.RemoveStatusCondition(&st.Conditions, parleyv1alpha1.ConditionDegraded)
	}
	return minted
}

// announceStart emits the events of a session that started or a history that was created in
// this reconcile: one event when both happened together (they usually do, and at 10,000 new
// Conversations the second event was one write in six), HistoryCreated alone when the history
// came later (a seed that appeared after the session started).
func announceStart(s *conversationScope, minted bool) {
	switch {
	case minted && s.historyCreated != "":
		s.event(parleyv1alpha1.EventSessionStarted, "Start", "session %s started with its history at %s; expires at %s",
			s.status.SessionID, s.historyCreated, s.status.ExpiresAt.UTC().Format(time.RFC3339))
	case minted:
		s.event(parleyv1alpha1.EventSessionStarted, "Start", "session %s started; expires at %s",
			s.status.SessionID, s.status.ExpiresAt.UTC().Format(time.RFC3339))
	case s.historyCreated != "":
		s.event(parleyv1alpha1.EventHistoryCreated, "Create", "history created at %s", s.historyCreated)
	}
}
