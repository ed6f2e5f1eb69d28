package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
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
