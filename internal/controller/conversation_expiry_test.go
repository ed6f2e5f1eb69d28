package controller

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// expiredAt is the status of a session that expired at t for reason.
func expiredAt(t time.Time, reason string) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) {
		c.Status.SessionID = mintedID
		c.Status.ExpiresAt = ptrTo(metav1.NewTime(t))
		withCondition(parleyv1alpha1.ConditionExpired, metav1.ConditionTrue, reason)(c)
	}
}

func TestDecideExpiry(t *testing.T) {
	hour := dur(time.Hour)
	tests := map[string]struct {
		conv *parleyv1alpha1.Conversation
		now  time.Time

		wantExpiresAt  time.Time
		wantExpired    bool
		wantExpiredNow bool
		wantReason     string // of the Expired condition
		wantMessage    string // part of it
		wantRequeue    time.Duration
		wantDeleteNow  bool
	}{
		"live: requeues exactly at the ttl": {
			conv: testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: hour})), now: created.Add(10 * time.Minute),
			wantExpiresAt: created.Add(time.Hour), wantReason: parleyv1alpha1.ReasonNotExpired,
			wantRequeue: 50 * time.Minute,
		},
		"ttl unset: the default applies": {
			conv: testConv(), now: created,
			wantExpiresAt: created.Add(24 * time.Hour), wantReason: parleyv1alpha1.ReasonNotExpired,
			wantRequeue: 24 * time.Hour,
		},
		"the expiry instant itself counts as expired": {
			conv: testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: hour})), now: created.Add(time.Hour),
			wantExpiresAt: created.Add(time.Hour), wantExpired: true, wantExpiredNow: true,
			wantReason: parleyv1alpha1.ReasonTTLExceeded, wantMessage: "ttl 1h0m0s reached",
		},
		"one nanosecond before is not": {
			conv: testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: hour})), now: created.Add(time.Hour - 1),
			wantExpiresAt: created.Add(time.Hour), wantReason: parleyv1alpha1.ReasonNotExpired,
			wantRequeue: time.Millisecond, // a due timer asks for the smallest delay, never zero or less
		},
		"idle: counted from the last activity": {
			conv: testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: dur(24 * time.Hour), IdleTimeout: hour}),
				func(c *parleyv1alpha1.Conversation) {
					c.Status.LastActivityTime = ptrTo(metav1.NewTime(created.Add(3 * time.Hour)))
				}),
			now:           created.Add(3*time.Hour + 59*time.Minute),
			wantExpiresAt: created.Add(4 * time.Hour), wantReason: parleyv1alpha1.ReasonNotExpired,
			wantRequeue: time.Minute,
		},
		"idle: expires an idle timeout after the last activity": {
			conv: testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: dur(24 * time.Hour), IdleTimeout: hour}),
				func(c *parleyv1alpha1.Conversation) {
					c.Status.LastActivityTime = ptrTo(metav1.NewTime(created.Add(3 * time.Hour)))
				}),
			now:           created.Add(4 * time.Hour),
			wantExpiresAt: created.Add(4 * time.Hour), wantExpired: true, wantExpiredNow: true,
			wantReason: parleyv1alpha1.ReasonIdleTimeout, wantMessage: "no activity for 1h0m0s",
		},
		"terminal: raising the ttl later does not revive it": {
			conv: testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: dur(48 * time.Hour)}),
				expiredAt(created.Add(time.Hour), parleyv1alpha1.ReasonTTLExceeded)),
			now:           created.Add(2 * time.Hour),
			wantExpiresAt: created.Add(time.Hour), wantExpired: true,
			wantReason: parleyv1alpha1.ReasonTTLExceeded,
		},
		"terminal: the idle reason is kept after new activity": {
			conv: testConv(withLifetime(parleyv1alpha1.LifetimeSpec{IdleTimeout: hour}),
				expiredAt(created.Add(time.Hour), parleyv1alpha1.ReasonIdleTimeout),
				func(c *parleyv1alpha1.Conversation) {
					c.Status.LastActivityTime = ptrTo(metav1.NewTime(created.Add(90 * time.Minute)))
				}),
			now:           created.Add(2 * time.Hour),
			wantExpiresAt: created.Add(time.Hour), wantExpired: true,
			wantReason: parleyv1alpha1.ReasonIdleTimeout,
		},
		"deleteAfter: requeues at the deletion time": {
			conv:          testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: hour, DeleteAfter: dur(30 * time.Minute)})),
			now:           created.Add(time.Hour + 10*time.Minute),
			wantExpiresAt: created.Add(time.Hour), wantExpired: true, wantExpiredNow: true,
			wantReason: parleyv1alpha1.ReasonTTLExceeded, wantRequeue: 20 * time.Minute,
		},
		"deleteAfter: deletes when due": {
			conv: testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: hour, DeleteAfter: dur(30 * time.Minute)}),
				expiredAt(created.Add(time.Hour), parleyv1alpha1.ReasonTTLExceeded)),
			now:           created.Add(90 * time.Minute),
			wantExpiresAt: created.Add(time.Hour), wantExpired: true,
			wantReason: parleyv1alpha1.ReasonTTLExceeded, wantDeleteNow: true,
		},
		"deleteAfter zero: deletes at expiry": {
			conv:          testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: hour, DeleteAfter: dur(0)})),
			now:           created.Add(time.Hour),
			wantExpiresAt: created.Add(time.Hour), wantExpired: true, wantExpiredNow: true,
			wantReason: parleyv1alpha1.ReasonTTLExceeded, wantDeleteNow: true,
		},
		"long overdue: no negative requeue": {
			conv:          testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: hour, DeleteAfter: dur(time.Hour)})),
			now:           created.Add(1000 * time.Hour),
			wantExpiresAt: created.Add(time.Hour), wantExpired: true, wantExpiredNow: true,
			wantReason: parleyv1alpha1.ReasonTTLExceeded, wantDeleteNow: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.conv.DeepCopy()
			s := newConversationScope(tc.conv, tc.now)
			d := decideExpiry(s)
			unchanged(t, before, tc.conv)

			if s.status.ExpiresAt == nil || !s.status.ExpiresAt.Time.Equal(tc.wantExpiresAt) {
				t.Errorf("expiresAt = %v, want %v", s.status.ExpiresAt, tc.wantExpiresAt)
			}
			if s.expired != tc.wantExpired || d.expiredNow != tc.wantExpiredNow || d.deleteNow != tc.wantDeleteNow {
				t.Errorf("expired %v expiredNow %v deleteNow %v, want %v %v %v",
					s.expired, d.expiredNow, d.deleteNow, tc.wantExpired, tc.wantExpiredNow, tc.wantDeleteNow)
			}
			if s.requeue != tc.wantRequeue {
				t.Errorf("requeue = %v, want %v", s.requeue, tc.wantRequeue)
			}
			if s.requeue < 0 {
				t.Errorf("negative requeue %v", s.requeue)
			}
			c := mustCondition(t, s, parleyv1alpha1.ConditionExpired)
			wantStatus := metav1.ConditionFalse
			if tc.wantExpired {
				wantStatus = metav1.ConditionTrue
			}
			if c.Status != wantStatus || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantMessage) {
				t.Errorf("Expired = %s %s %q, want %s %s containing %q", c.Status, c.Reason, c.Message, wantStatus, tc.wantReason, tc.wantMessage)
			}
			if c.ObservedGeneration != tc.conv.Generation {
				t.Errorf("Expired observedGeneration %d, want %d", c.ObservedGeneration, tc.conv.Generation)
			}
		})
	}
}

// The Expired event is announced once: deciding again from the written status is not "now".
func TestDecideExpiryAnnouncesOnce(t *testing.T) {
	conv := testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: dur(time.Hour)}))
	s := newConversationScope(conv, created.Add(time.Hour))
	if !decideExpiry(s).expiredNow {
		t.Fatal("not expired at the instant")
	}
	conv.Status = s.status
	again := newConversationScope(conv, created.Add(time.Hour+time.Second))
	if d := decideExpiry(again); d.expiredNow || !again.expired {
		t.Errorf("second decision: expiredNow %v expired %v, want false true", d.expiredNow, again.expired)
	}
}
