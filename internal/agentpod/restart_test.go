package agentpod

import (
	"testing"
	"time"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

func TestBackoff(t *testing.T) {
	p := Policy{MaxRestarts: 10, Initial: 10 * time.Second, Max: time.Minute}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute, time.Minute}
	for restarts, w := range want {
		if got := p.Backoff(int32(restarts)); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", restarts, got, w)
		}
	}
	if got := (Policy{Initial: time.Second, Max: time.Hour}).Backoff(1000); got != time.Hour {
		t.Errorf("Backoff(1000) = %v: no overflow, capped at max", got)
	}
}

func TestAfterCrash(t *testing.T) {
	p := Policy{MaxRestarts: 3, Initial: time.Second, Max: 8 * time.Second}
	cases := []struct {
		name         string
		restarts     int32
		prevTurn     int64
		prevFailures int32
		turn         int64
		restart      bool
		reason       string
		failures     int32
		delay        time.Duration
	}{
		{"first crash", 0, 0, 0, 4, true, "", 1, time.Second},
		{"second crash at another turn", 1, 3, 1, 4, true, "", 1, 2 * time.Second},
		{"second crash at the same turn", 1, 4, 1, 4, true, "", 2, 2 * time.Second},
		{"third crash at the same turn is poison", 2, 4, 2, 4, false, parleyv1alpha1.ReasonPoisonTurn, 3, 0},
		{"poison wins over max restarts", 3, 4, 2, 4, false, parleyv1alpha1.ReasonPoisonTurn, 3, 0},
		{"progress resets the count", 2, 4, 2, 5, true, "", 1, 4 * time.Second},
		{"max restarts reached", 3, 1, 1, 7, false, parleyv1alpha1.ReasonMaxRestartsExceeded, 1, 0},
		{"turn 0 repeated with no earlier failure", 0, 0, 0, 1, true, "", 1, time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := AfterCrash(p, tc.restarts, tc.prevTurn, tc.prevFailures, tc.turn, t0)
			if v.Restart != tc.restart || v.Reason != tc.reason || v.FailuresAtTurn != tc.failures {
				t.Fatalf("AfterCrash = %+v, want restart %v reason %q failures %d", v, tc.restart, tc.reason, tc.failures)
			}
			if tc.restart && v.StartAt != t0.Add(tc.delay) {
				t.Errorf("StartAt = %v, want +%v", v.StartAt.Sub(t0), tc.delay)
			}
			if !tc.restart && v.Message == "" {
				t.Error("a failure without a message")
			}
		})
	}
}
