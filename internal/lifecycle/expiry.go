// Package lifecycle holds the pure decisions of a Conversation's life: when it expires, when it
// is deleted, when to look at it next. No API calls, no clocks: callers pass "now".
package lifecycle

import (
	"time"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// Expiry is when a session expires and which limit causes it.
type Expiry struct {
	// At is the earlier of creation+ttl and lastActivity+idleTimeout.
	At time.Time
	// Reason is ReasonTTLExceeded or ReasonIdleTimeout.
	Reason string
}

// ExpiryOf computes when a session expires. lastActivity is the last append; the zero time means
// there has been none, and idleness counts from creation.
func ExpiryOf(lifetime parleyv1alpha1.LifetimeSpec, created, lastActivity time.Time) Expiry {
	exp := Expiry{At: created.Add(lifetime.GetTTL()), Reason: parleyv1alpha1.ReasonTTLExceeded}
	if lifetime.IdleTimeout != nil {
		since := created
		if lastActivity.After(since) {
			since = lastActivity
		}
		if idle := since.Add(lifetime.IdleTimeout.Duration); idle.Before(exp.At) {
			exp = Expiry{At: idle, Reason: parleyv1alpha1.ReasonIdleTimeout}
		}
	}
	return exp
}

// Expired reports whether a session expiring at exp has expired at now. The expiry instant itself
// counts as expired, so a timer firing exactly on time acts.
func (e Expiry) Expired(now time.Time) bool {
	return !now.Before(e.At)
}

// DeletionTime is when an expired Conversation is deleted, and whether it is at all
// (lifetime.deleteAfter unset keeps it).
func DeletionTime(lifetime parleyv1alpha1.LifetimeSpec, expiredAt time.Time) (time.Time, bool) {
	if lifetime.DeleteAfter == nil {
		return time.Time{}, false
	}
	return expiredAt.Add(lifetime.DeleteAfter.Duration), true
}

// RequeueAfter is how long to wait until at, never negative: a timer already due fires at once.
func RequeueAfter(now, at time.Time) time.Duration {
	return max(at.Sub(now), 0)
}
