package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/metrics"
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

// The wake latency counts from the exact activity, not from status's whole seconds: a wake
// 100 ms after a message at .900 would otherwise read as a second.
func TestObserveWakeCountsFromTheExactActivity(t *testing.T) {
	sent := time.Date(2026, 11, 25, 10, 0, 5, 900_000_000, time.UTC)
	s := newConversationScope(&parleyv1alpha1.Conversation{}, sent)
	applyActivity(s, sent)
	s.agentStarted = startWake
	before := histogramSum(t, metrics.WakeLatency)
	observeWake(s, sent.Add(100*time.Millisecond))
	if got := histogramSum(t, metrics.WakeLatency) - before; got < 0.099 || got > 0.101 {
		t.Errorf("wake observed as %.3f s, want 0.100 s", got)
	}
}

func histogramSum(t *testing.T, h prometheus.Histogram) float64 {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleSum()
}
