package controller

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/lifecycle"
)

// conversationDecision is what one reconcile decided: the status to write, what to announce,
// whether to delete the object, and when to look again.
type conversationDecision struct {
	status       parleyv1alpha1.ConversationStatus
	minted       bool
	expiredNow   bool
	deleteNow    bool
	requeueAfter time.Duration
}

// decideConversation is the pure core of the Conversation reconciler: from the object, the time
// and a source of fresh session ids it derives the whole status. It never mutates conv.
func decideConversation(conv *parleyv1alpha1.Conversation, now time.Time, newSessionID func() string) conversationDecision {
	st := *conv.Status.DeepCopy()
	d := conversationDecision{}

	// A session id, once in status, never changes: agents and stored history are keyed by it.
	if st.SessionID == "" {
		if conv.Spec.SessionID != "" {
			st.SessionID = conv.Spec.SessionID
		} else {
			st.SessionID = newSessionID()
		}
		d.minted = true
	}

	alreadyExpired := meta.IsStatusConditionTrue(st.Conditions, parleyv1alpha1.ConditionExpired)
	var expiry lifecycle.Expiry
	if alreadyExpired && st.ExpiresAt != nil {
		// Expiry is terminal: a later spec change does not revive a session whose history may
		// already have been handled by the expiration policy.
		cond := meta.FindStatusCondition(st.Conditions, parleyv1alpha1.ConditionExpired)
		expiry = lifecycle.Expiry{At: st.ExpiresAt.Time, Reason: cond.Reason}
	} else {
		var last time.Time
		if st.LastActivityTime != nil {
			last = st.LastActivityTime.Time
		}
		expiry = lifecycle.ExpiryOf(conv.Spec.Lifetime, conv.CreationTimestamp.Time, last)
		at := metav1.NewTime(expiry.At)
		st.ExpiresAt = &at
	}
	expired := alreadyExpired || expiry.Expired(now)
	d.expiredNow = expired && !alreadyExpired

	gen := conv.Generation
	set := func(condType string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: condType, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
		})
	}

	if expired {
		set(parleyv1alpha1.ConditionExpired, metav1.ConditionTrue, expiry.Reason, expiredMessage(conv, expiry))
		set(parleyv1alpha1.ConditionReady, metav1.ConditionFalse, parleyv1alpha1.ReasonExpired,
			"the session expired; create a new Conversation or fork this one from a Checkpoint to continue")
		st.Phase = parleyv1alpha1.ConversationExpired
		if deleteAt, ok := lifecycle.DeletionTime(conv.Spec.Lifetime, expiry.At); ok {
			if now.Before(deleteAt) {
				d.requeueAfter = lifecycle.RequeueAfter(now, deleteAt)
			} else {
				d.deleteNow = true
			}
		}
	} else {
		set(parleyv1alpha1.ConditionExpired, metav1.ConditionFalse, parleyv1alpha1.ReasonNotExpired,
			fmt.Sprintf("the session expires at %s unless extended", expiry.At.UTC().Format(time.RFC3339)))
		set(parleyv1alpha1.ConditionReady, metav1.ConditionTrue, parleyv1alpha1.ReasonActive,
			"session id assigned and lifetime tracked; history storage, compaction and agent pods are not managed by this version yet")
		st.Phase = parleyv1alpha1.ConversationActive
		if conv.Spec.Suspend != nil && *conv.Spec.Suspend {
			st.Phase = parleyv1alpha1.ConversationSuspended
		}
		d.requeueAfter = lifecycle.RequeueAfter(now, expiry.At)
	}

	// Honest about what this version does not do yet.
	set(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionUnknown, parleyv1alpha1.ReasonNotImplemented,
		"history storage is not wired into the controller yet; appends are not accepted")
	if conv.Spec.Agent == nil {
		set(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonNoAgent,
			"spec.agent is not set: Parley keeps the history only")
	} else {
		set(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionUnknown, parleyv1alpha1.ReasonNotImplemented,
			"agent pods are not created by this version yet")
	}

	// spec.sessionID may be added after the controller minted one (the API allows pinning it
	// later). The running session keeps its id; say so instead of ignoring the spec silently.
	if conv.Spec.SessionID != "" && conv.Spec.SessionID != st.SessionID {
		set(parleyv1alpha1.ConditionDegraded, metav1.ConditionTrue, parleyv1alpha1.ReasonSessionIDMismatch,
			fmt.Sprintf("spec.sessionID %s was set after the session started as %s; the session keeps %s. "+
				"To use another id, create a new Conversation", conv.Spec.SessionID, st.SessionID, st.SessionID))
	} else {
		meta.RemoveStatusCondition(&st.Conditions, parleyv1alpha1.ConditionDegraded)
	}

	st.ObservedGeneration = gen
	d.status = st
	return d
}

func expiredMessage(conv *parleyv1alpha1.Conversation, e lifecycle.Expiry) string {
	at := e.At.UTC().Format(time.RFC3339)
	if e.Reason == parleyv1alpha1.ReasonIdleTimeout && conv.Spec.Lifetime.IdleTimeout != nil {
		return fmt.Sprintf("no activity for %s; expired at %s", conv.Spec.Lifetime.IdleTimeout.Duration, at)
	}
	ttl := lifecycle.DefaultTTL
	if conv.Spec.Lifetime.TTL != nil {
		ttl = conv.Spec.Lifetime.TTL.Duration
	}
	return fmt.Sprintf("ttl %s reached at %s", ttl, at)
}
