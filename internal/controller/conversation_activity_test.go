package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history"
)

func TestApplyActivityMovesLastActivityForwardOnly(t *testing.T) {
	base := time.Date(2026, 11, 25, 10, 0, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		status *time.Time
		at     time.Time
		want   time.Time
	}{
		{"none yet", nil, base.Add(300 * time.Millisecond), base},
		{"later, in whole seconds", &base, base.Add(2*time.Second + 900*time.Millisecond), base.Add(2 * time.Second)},
		{"earlier is ignored", &base, base.Add(-3 * time.Second), base},
		{"the same second is no change", &base, base.Add(999 * time.Millisecond), base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := &parleyv1alpha1.Conversation{}
			if tc.status != nil {
				mt := metav1.NewTime(*tc.status)
				conv.Status.LastActivityTime = &mt
			}
			s := newConversationScope(conv, base)
			applyActivity(s, tc.at)
			if got := s.status.LastActivityTime; got == nil || !got.Time.Equal(tc.want) {
				t.Errorf("lastActivityTime = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestViewHeadToTrust: the view stands in for a read of the store only for activity this
// replica handed over with the head its writes left, and only when nothing else wrote the
// Conversation since this controller's last reconcile (another replica's activity patch would
// have: its appends are not in the view).
func TestViewHeadToTrust(t *testing.T) {
	head := &history.Head{Epoch: 1, Sequence: 9}
	for _, tc := range []struct {
		name      string
		took      bool
		head      *history.Head
		unchanged bool
		trust     bool
	}{
		{"own appends, nothing else since", true, head, true, true},
		{"another writer patched the object", true, head, false, false},
		{"a write that told no head", true, nil, true, false},
		{"no activity handed over", false, head, true, false},
	} {
		got := viewHeadToTrust(tc.took, tc.head, tc.unchanged)
		if (got != nil) != tc.trust {
			t.Errorf("%s: %v, want trust %v", tc.name, got, tc.trust)
		}
	}
}
