package controller

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/pkg/history"
)

func TestDecideHistoryAction(t *testing.T) {
	policy := func(p parleyv1alpha1.ExpirationPolicy) func(*parleyv1alpha1.Conversation) {
		return func(c *parleyv1alpha1.Conversation) { c.Spec.Lifetime.ExpirationPolicy = p }
	}
	history := func(status metav1.ConditionStatus, reason string) func(*parleyv1alpha1.Conversation) {
		return withCondition(parleyv1alpha1.ConditionHistoryAvailable, status, reason)
	}
	summarised := func(c *parleyv1alpha1.Conversation) {
		c.Status.History = &parleyv1alpha1.HistoryStatus{Messages: 3, Sequence: 4, Epoch: 1}
	}
	tests := map[string]struct {
		conv    *parleyv1alpha1.Conversation
		expired bool
		current bool // summaryCurrent: nothing wrote the object since this controller's summary
		want    historyAction
	}{
		"live keeps the history whatever the policy": {conv: testConv(policy(parleyv1alpha1.ExpirationPolicyDelete)), want: historyKeep},
		"live with no policy":                        {conv: testConv(), want: historyKeep},
		"expired Retain reads only":                  {conv: testConv(policy(parleyv1alpha1.ExpirationPolicyRetain)), expired: true, want: historyReadOnly},
		"expired without a policy reads only":        {conv: testConv(), expired: true, want: historyReadOnly},
		"expired Delete deletes":                     {conv: testConv(policy(parleyv1alpha1.ExpirationPolicyDelete)), expired: true, want: historyDelete},
		"expired Archive archives":                   {conv: testConv(policy(parleyv1alpha1.ExpirationPolicyArchive)), expired: true, want: historyArchive},
		"Delete retried after a store failure": {
			conv:    testConv(policy(parleyv1alpha1.ExpirationPolicyDelete), history(metav1.ConditionFalse, parleyv1alpha1.ReasonStoreUnavailable)),
			expired: true, want: historyDelete,
		},
		"done once deleted": {
			conv:    testConv(policy(parleyv1alpha1.ExpirationPolicyDelete), history(metav1.ConditionFalse, parleyv1alpha1.ReasonHistoryDeleted)),
			expired: true, want: historyDone,
		},
		"done once archived": {
			conv:    testConv(policy(parleyv1alpha1.ExpirationPolicyArchive), history(metav1.ConditionFalse, parleyv1alpha1.ReasonHistoryArchived)),
			expired: true, want: historyDone,
		},
		"done even if the policy changed afterwards": {
			conv:    testConv(policy(parleyv1alpha1.ExpirationPolicyRetain), history(metav1.ConditionFalse, parleyv1alpha1.ReasonHistoryDeleted)),
			expired: true, want: historyDone,
		},
		"retained history is read again": {
			conv:    testConv(policy(parleyv1alpha1.ExpirationPolicyRetain), history(metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryRetained)),
			expired: true, want: historyReadOnly,
		},
		"expired Retain with its own summary current is not read": {
			conv:    testConv(policy(parleyv1alpha1.ExpirationPolicyRetain), summarised, history(metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady)),
			expired: true, current: true, want: historyRetained,
		},
		"retained and current stays unread": {
			conv:    testConv(summarised, history(metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryRetained)),
			expired: true, current: true, want: historyRetained,
		},
		"written since (activity) is read": {
			conv:    testConv(summarised, history(metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady)),
			expired: true, want: historyReadOnly,
		},
		"current but the last read failed is read": {
			conv:    testConv(summarised, history(metav1.ConditionFalse, parleyv1alpha1.ReasonStoreUnavailable)),
			expired: true, current: true, want: historyReadOnly,
		},
		"current but never summarised is read": {
			conv:    testConv(history(metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady)),
			expired: true, current: true, want: historyReadOnly,
		},
		"live and current is still read": {
			conv:    testConv(summarised, history(metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady)),
			current: true, want: historyKeep,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newConversationScope(tc.conv, created)
			s.expired, s.summaryCurrent = tc.expired, tc.current
			if got := decideHistoryAction(s); got != tc.want {
				t.Errorf("decideHistoryAction = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestContextStatus(t *testing.T) {
	tests := map[string]struct {
		maxTokens *int64
		tokens    int
		want      parleyv1alpha1.ContextStatus
	}{
		"no limit: the count only":   {tokens: 1234, want: parleyv1alpha1.ContextStatus{Tokens: 1234}},
		"zero limit is no limit":     {maxTokens: ptrTo(int64(0)), tokens: 10, want: parleyv1alpha1.ContextStatus{Tokens: 10}},
		"negative limit is no limit": {maxTokens: ptrTo(int64(-5)), tokens: 10, want: parleyv1alpha1.ContextStatus{Tokens: 10}},
		"a quarter":                  {maxTokens: ptrTo(int64(200000)), tokens: 50000, want: parleyv1alpha1.ContextStatus{Tokens: 50000, Limit: 200000, Percent: 25}},
		"rounds down":                {maxTokens: ptrTo(int64(3)), tokens: 2, want: parleyv1alpha1.ContextStatus{Tokens: 2, Limit: 3, Percent: 66}},
		"over the limit":             {maxTokens: ptrTo(int64(100)), tokens: 250, want: parleyv1alpha1.ContextStatus{Tokens: 250, Limit: 100, Percent: 250}},
		"empty":                      {maxTokens: ptrTo(int64(100)), want: parleyv1alpha1.ContextStatus{Limit: 100}},
		"percent is capped, never wraps": {
			maxTokens: ptrTo(int64(1)), tokens: 1 << 40,
			want: parleyv1alpha1.ContextStatus{Tokens: 1 << 40, Limit: 1, Percent: 1 << 30},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := contextStatus(tc.maxTokens, tc.tokens); *got != tc.want {
				t.Errorf("contextStatus = %+v, want %+v", *got, tc.want)
			}
		})
	}
}

// A history that cannot be read because its bytes are corrupt or hostile, or that reached its
// cap, fails its Conversation with a condition and is looked at again later, not retried with
// the workqueue's backoff (milliseconds at first), which would read the same bytes again; a
// store that is down is retried with backoff.
func TestHistoryFailureRetry(t *testing.T) {
	for name, tt := range map[string]struct {
		err         error
		reason      string
		withBackoff bool
	}{
		"corrupt":     {fmt.Errorf("segment: %w", history.ErrCorrupt), parleyv1alpha1.ReasonHistoryCorrupt, false},
		"too large":   {fmt.Errorf("append: %w", history.ErrTooLarge), parleyv1alpha1.ReasonHistoryTooLarge, false},
		"unavailable": {fmt.Errorf("get: %w", history.ErrUnavailable), parleyv1alpha1.ReasonStoreUnavailable, true},
		// forkFrom is immutable: retrying cannot mend it, only re-creating the Conversation.
		"fork source mismatch": {
			&historystore.Error{Reason: parleyv1alpha1.ReasonForkSourceMismatch, Message: "not that conversation's"},
			parleyv1alpha1.ReasonForkSourceMismatch, false,
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := newConversationScope(testConv(), created)
			(&ConversationReconciler{}).historyFailed(s, tt.err)
			c := s.condition(parleyv1alpha1.ConditionHistoryAvailable)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tt.reason {
				t.Fatalf("HistoryAvailable %+v, want False with reason %s", c, tt.reason)
			}
			if got := s.retryErr != nil; got != tt.withBackoff {
				t.Fatalf("retried with the workqueue's backoff: %v, want %v", got, tt.withBackoff)
			}
			wantRequeue := time.Duration(0)
			if !tt.withBackoff && tt.reason != parleyv1alpha1.ReasonForkSourceMismatch {
				wantRequeue = lastingHistoryRecheck
			}
			if s.requeue != wantRequeue {
				t.Fatalf("requeued after %v, want %v (0: not at all)", s.requeue, wantRequeue)
			}
			if len(s.events) != 1 || !s.events[0].warning {
				t.Fatalf("events %+v, want one Warning", s.events)
			}
		})
	}
}

// A read put off because this replica's decode budget was taken says nothing about the history:
// its HistoryAvailable condition stays as it was, a Warning event says why it was not read, and
// it is read again after a few seconds rather than with the workqueue's backoff.
func TestHistoryReadDeferredWhenDecodesAreBusy(t *testing.T) {
	s := newConversationScope(testConv(), created)
	s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady, "")
	(&ConversationReconciler{}).historyFailed(s, fmt.Errorf("segment: %w", history.ErrBusy))
	if c := s.condition(parleyv1alpha1.ConditionHistoryAvailable); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("HistoryAvailable %+v, want it left True", c)
	}
	if s.retryErr != nil || s.requeue != busyHistoryRecheck {
		t.Fatalf("retry error %v, requeue %v: want no backoff and a look again after %v", s.retryErr, s.requeue, busyHistoryRecheck)
	}
	if len(s.events) != 1 || s.events[0].reason != parleyv1alpha1.EventHistoryReadDeferred || !s.events[0].warning {
		t.Fatalf("events %+v, want one Warning %s", s.events, parleyv1alpha1.EventHistoryReadDeferred)
	}
}
