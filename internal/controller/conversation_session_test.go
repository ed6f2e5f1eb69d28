package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

func TestDecideSession(t *testing.T) {
	degraded := parleyv1alpha1.ConditionDegraded
	tests := map[string]struct {
		conv         *parleyv1alpha1.Conversation
		wantID       string
		wantMinted   bool
		wantCalls    int    // calls of the id source
		wantDegraded string // reason of Degraded, "" for none
	}{
		"mints a fresh id": {
			conv: testConv(), wantID: mintedID, wantMinted: true, wantCalls: 1,
		},
		"takes the pinned id": {
			conv:   testConv(func(c *parleyv1alpha1.Conversation) { c.Spec.SessionID = pinnedID }),
			wantID: pinnedID, wantMinted: true,
		},
		"never replaces the id in status": {
			conv:   testConv(withSession("already-there")),
			wantID: "already-there",
		},
		"keeps its id when spec.sessionID is pinned later, and says so": {
			conv:   testConv(withSession(mintedID), func(c *parleyv1alpha1.Conversation) { c.Spec.SessionID = pinnedID }),
			wantID: mintedID, wantDegraded: parleyv1alpha1.ReasonSessionIDMismatch,
		},
		"clears the mismatch once the spec agrees": {
			conv: testConv(withSession(mintedID), func(c *parleyv1alpha1.Conversation) { c.Spec.SessionID = mintedID },
				withCondition(degraded, metav1.ConditionTrue, parleyv1alpha1.ReasonSessionIDMismatch)),
			wantID: mintedID,
		},
		"leaves a Degraded condition of another cause alone": {
			conv:   testConv(withSession(mintedID), withCondition(degraded, metav1.ConditionTrue, "SomethingElse")),
			wantID: mintedID, wantDegraded: "SomethingElse",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.conv.DeepCopy()
			calls := 0
			s := newConversationScope(tc.conv, created)
			minted := decideSession(s, func() string { calls++; return mintedID })
			unchanged(t, before, tc.conv)
			if s.status.SessionID != tc.wantID || minted != tc.wantMinted {
				t.Errorf("session %q minted %v, want %q %v", s.status.SessionID, minted, tc.wantID, tc.wantMinted)
			}
			if calls != tc.wantCalls {
				t.Errorf("id source called %d times, want %d", calls, tc.wantCalls)
			}
			c := s.condition(degraded)
			switch {
			case tc.wantDegraded == "" && c != nil:
				t.Errorf("unexpected Degraded condition %+v", *c)
			case tc.wantDegraded != "" && (c == nil || c.Reason != tc.wantDegraded || c.Status != metav1.ConditionTrue):
				t.Errorf("Degraded = %+v, want True %s", c, tc.wantDegraded)
			}
		})
	}
}
