package controller

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/lifecycle"
)

// expiryDecision is what the expiry phase decided beyond the status it set.
type expiryDecision struct {
	// expiredNow: the session expired in this reconcile (announce it once).
	expiredNow bool
	// deleteNow: lifetime.deleteAfter has passed since expiry; delete the object.
	deleteNow bool
}

// decideExpiry computes when the session expires, sets the Expired condition and asks to be
// woken at the next due instant (expiry, or deletion after it). Expiry is terminal: a later spec
// change does not revive a session whose history the expiration policy may have handled.
func decideExpiry(s *conversationScope) expiryDecision {
	st := &s.status
	var d expiryDecision
	alreadyExpired := meta.IsStatusConditionTrue(st.Conditions, parleyv1alpha1.ConditionExpired)
	if alreadyExpired && st.ExpiresAt != nil {
		cond := meta.FindStatusCondition(st.Conditions, parleyv1alpha1.ConditionExpired)
		s.expiry = lifecycle.Expiry{At: st.ExpiresAt.Time, Reason: cond.Reason}
	} else {
		var last time.Time
		if st.LastActivityTime != nil {
			last = st.LastActivityTime.Time
		}
		s.expiry = lifecycle.ExpiryOf(s.conv.Spec.Lifetime, s.conv.CreationTimestamp.Time, last)
		at := metav1.NewTime(s.expiry.At)
		st.ExpiresAt = &at
	}
	s.expired = alreadyExpired || s.expiry.Expired(s.now)
	d.expiredNow = s.expired && !alreadyExpired

	if !s.expired {
		s.setCondition(parleyv1alpha1.ConditionExpired, metav1.ConditionFalse, parleyv1alpha1.ReasonNotExpired,
			fmt.Sprintf("the session expires at %s unless extended", s.expiry.At.UTC().Format(time.RFC3339)))
		s.requeueAt(s.expiry.At)
		return d
	}
	s.setCondition(parleyv1alpha1.ConditionExpired, metav1.ConditionTrue, s.expiry.Reason, expiredMessage(s.conv, s.expiry))
	if deleteAt, ok := lifecycle.DeletionTime(s.conv.Spec.Lifetime, s.expiry.At); ok {
		if s.now.Before(deleteAt) {
			s.requeueAt(deleteAt)
		} else {
			d.deleteNow = true
		}
	}
	return d
}

func expiredMessage(conv *parleyv1alpha1.Conversation, e lifecycle.Expiry) string {
	at := e.At.UTC().Format(time.RFC3339)
	if e.Reason == parleyv1alpha1.ReasonIdleTimeout && conv.Spec.Lifetime.IdleTimeout != nil {
		return fmt.Sprintf("no activity for %s; expired at %s", conv.Spec.Lifetime.IdleTimeout.Duration, at)
	}
	return fmt.Sprintf("ttl %s reached at %s", conv.Spec.Lifetime.GetTTL(), at)
}
