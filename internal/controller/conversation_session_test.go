package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

func TestSessionIDFor(t *testing.T) {
	a, b := types.UID("0b6f3f0e-8a51-4d0c-9d7e-5a9f1f0c2e11"), types.UID("7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f")
	first := SessionIDFor(a)
	id, err := uuid.Parse(first)
	if err != nil || id.Version() != 5 {
		t.Fatalf("SessionIDFor(%s) = %q (%v), want a UUID v5", a, first, err)
	}
	if again := SessionIDFor(a); again != first {
		t.Errorf("the same uid gave %s, then %s: a retry after a lost status write would open another history", first, again)
	}
	if other := SessionIDFor(b); other == first {
		t.Errorf("two uids gave the same session id %s: a re-created Conversation would inherit the history", first)
	}
}

func TestAnnounceStart(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC))
	cases := []struct {
		name           string
		minted         bool
		historyCreated string
		want           []string
	}{
		{"both in one reconcile: one event", true, "configmap://ns/h", []string{"SessionStarted: session s1 started with its history at configmap://ns/h; expires at 2026-11-23T18:00:00Z"}},
		{"a session whose history waits", true, "", []string{"SessionStarted: session s1 started; expires at 2026-11-23T18:00:00Z"}},
		{"a history after its session", false, "configmap://ns/h", []string{"HistoryCreated: history created at configmap://ns/h"}},
		{"neither", false, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &conversationScope{historyCreated: tc.historyCreated}
			s.status.SessionID, s.status.ExpiresAt = "s1", &at
			announceStart(s, tc.minted)
			var got []string
			for _, e := range s.events {
				got = append(got, e.reason+": "+e.message)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
		})
	}
}
