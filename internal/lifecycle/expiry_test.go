package lifecycle

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestExpiryOf(t *testing.T) {
	created := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		lifetime     parleyv1alpha1.LifetimeSpec
		lastActivity time.Time
		wantAt       time.Time
		wantReason   string
	}{
		"ttl unset defaults to 24h": {
			wantAt: created.Add(24 * time.Hour), wantReason: parleyv1alpha1.ReasonTTLExceeded,
		},
		"ttl from creation": {
			lifetime: parleyv1alpha1.LifetimeSpec{TTL: dur(90 * time.Minute)},
			wantAt:   created.Add(90 * time.Minute), wantReason: parleyv1alpha1.ReasonTTLExceeded,
		},
		"idle timeout counts from creation without activity": {
			lifetime: parleyv1alpha1.LifetimeSpec{TTL: dur(time.Hour), IdleTimeout: dur(10 * time.Minute)},
			wantAt:   created.Add(10 * time.Minute), wantReason: parleyv1alpha1.ReasonIdleTimeout,
		},
		"idle timeout counts from last activity": {
			lifetime:     parleyv1alpha1.LifetimeSpec{TTL: dur(time.Hour), IdleTimeout: dur(10 * time.Minute)},
			lastActivity: created.Add(30 * time.Minute),
			wantAt:       created.Add(40 * time.Minute), wantReason: parleyv1alpha1.ReasonIdleTimeout,
		},
		"ttl wins when it comes first": {
			lifetime:     parleyv1alpha1.LifetimeSpec{TTL: dur(time.Hour), IdleTimeout: dur(10 * time.Minute)},
			lastActivity: created.Add(55 * time.Minute),
			wantAt:       created.Add(time.Hour), wantReason: parleyv1alpha1.ReasonTTLExceeded,
		},
		"activity before creation is ignored": {
			lifetime:     parleyv1alpha1.LifetimeSpec{TTL: dur(time.Hour), IdleTimeout: dur(10 * time.Minute)},
			lastActivity: created.Add(-time.Hour),
			wantAt:       created.Add(10 * time.Minute), wantReason: parleyv1alpha1.ReasonIdleTimeout,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ExpiryOf(tc.lifetime, created, tc.lastActivity)
			if !got.At.Equal(tc.wantAt) || got.Reason != tc.wantReason {
				t.Fatalf("ExpiryOf = %v %s, want %v %s", got.At, got.Reason, tc.wantAt, tc.wantReason)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	e := Expiry{At: at}
	if e.Expired(at.Add(-time.Nanosecond)) {
		t.Error("expired one nanosecond early")
	}
	if !e.Expired(at) {
		t.Error("not expired at the expiry instant")
	}
	if !e.Expired(at.Add(time.Hour)) {
		t.Error("not expired an hour late")
	}
}

func TestDeletionTime(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if _, ok := DeletionTime(parleyv1alpha1.LifetimeSpec{}, at); ok {
		t.Error("deleteAfter unset must keep the object")
	}
	got, ok := DeletionTime(parleyv1alpha1.LifetimeSpec{DeleteAfter: dur(time.Hour)}, at)
	if !ok || !got.Equal(at.Add(time.Hour)) {
		t.Errorf("DeletionTime = %v %v, want %v true", got, ok, at.Add(time.Hour))
	}
	got, ok = DeletionTime(parleyv1alpha1.LifetimeSpec{DeleteAfter: dur(0)}, at)
	if !ok || !got.Equal(at) {
		t.Errorf("deleteAfter 0 = %v %v, want immediate deletion", got, ok)
	}
}

func TestRequeueAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if got := RequeueAfter(now, now.Add(time.Minute)); got != time.Minute {
		t.Errorf("future: %v", got)
	}
	if got := RequeueAfter(now, now.Add(-time.Minute)); got != 0 {
		t.Errorf("past must not be negative: %v", got)
	}
	if got := RequeueAfter(now, now); got != 0 {
		t.Errorf("due now: %v", got)
	}
}
