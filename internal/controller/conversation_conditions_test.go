package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

func TestSummarizeConditions(t *testing.T) {
	historyUp := withCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady)
	suspend := func(c *parleyv1alpha1.Conversation) { c.Spec.Suspend = ptrTo(true) }
	tests := map[string]struct {
		conv    *parleyv1alpha1.Conversation
		expired bool

		wantPhase       parleyv1alpha1.ConversationPhase
		wantReady       metav1.ConditionStatus
		wantReason      string
		wantMessage     string // exact, when set
		wantHistory     string // HistoryAvailable reason afterwards
		wantAgentReason string
		wantAgentStatus metav1.ConditionStatus
	}{
		"active": {
			conv:      testConv(historyUp),
			wantPhase: parleyv1alpha1.ConversationActive, wantReady: metav1.ConditionTrue, wantReason: parleyv1alpha1.ReasonActive,
			wantHistory: parleyv1alpha1.ReasonHistoryReady,
		},
		"suspended: Ready, phase Suspended": {
			conv:      testConv(historyUp, suspend),
			wantPhase: parleyv1alpha1.ConversationSuspended, wantReady: metav1.ConditionTrue, wantReason: parleyv1alpha1.ReasonActive,
			wantHistory: parleyv1alpha1.ReasonHistoryReady,
		},
		"suspend false is not suspended": {
			conv:      testConv(historyUp, func(c *parleyv1alpha1.Conversation) { c.Spec.Suspend = ptrTo(false) }),
			wantPhase: parleyv1alpha1.ConversationActive, wantReady: metav1.ConditionTrue, wantReason: parleyv1alpha1.ReasonActive,
			wantHistory: parleyv1alpha1.ReasonHistoryReady,
		},
		"no history condition yet: initializing": {
			conv:      testConv(),
			wantPhase: parleyv1alpha1.ConversationPending, wantReady: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonInitializing,
			wantHistory: parleyv1alpha1.ReasonInitializing,
		},
		"history unavailable: Ready says why": {
			conv:      testConv(withCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionFalse, parleyv1alpha1.ReasonStoreUnavailable)),
			wantPhase: parleyv1alpha1.ConversationPending, wantReady: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonStoreUnavailable,
			wantMessage: "history unavailable: before", wantHistory: parleyv1alpha1.ReasonStoreUnavailable,
		},
		"history unknown: not Ready": {
			conv:      testConv(withCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionUnknown, parleyv1alpha1.ReasonInitializing)),
			wantPhase: parleyv1alpha1.ConversationPending, wantReady: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonInitializing,
			wantHistory: parleyv1alpha1.ReasonInitializing,
		},
		"suspended without a history is pending": {
			conv:      testConv(suspend),
			wantPhase: parleyv1alpha1.ConversationPending, wantReady: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonInitializing,
			wantHistory: parleyv1alpha1.ReasonInitializing,
		},
		"expired wins over an available history": {
			conv: testConv(historyUp, suspend), expired: true,
			wantPhase: parleyv1alpha1.ConversationExpired, wantReady: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonExpired,
			wantHistory: parleyv1alpha1.ReasonHistoryReady,
		},
		"expired wins over a deleted history": {
			conv:    testConv(withCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionFalse, parleyv1alpha1.ReasonHistoryDeleted)),
			expired: true, wantPhase: parleyv1alpha1.ConversationExpired, wantReady: metav1.ConditionFalse,
			wantReason: parleyv1alpha1.ReasonExpired, wantHistory: parleyv1alpha1.ReasonHistoryDeleted,
		},
		"an agent declared before the agent phase ran waits for the history": {
			conv:      testConv(historyUp, withAgent),
			wantPhase: parleyv1alpha1.ConversationActive, wantReady: metav1.ConditionTrue, wantReason: parleyv1alpha1.ReasonActive,
			wantHistory: parleyv1alpha1.ReasonHistoryReady, wantAgentReason: parleyv1alpha1.ReasonWaitingForHistory,
		},
		"an agent given up on fails the conversation": {
			conv: testConv(historyUp, withAgent,
				withCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonPoisonTurn)),
			wantPhase: parleyv1alpha1.ConversationFailed, wantReady: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonPoisonTurn,
			wantHistory: parleyv1alpha1.ReasonHistoryReady, wantAgentReason: parleyv1alpha1.ReasonPoisonTurn,
		},
		"a template conflict fails the conversation": {
			conv: testConv(historyUp, withAgent,
				withCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonTemplateConflict)),
			wantPhase: parleyv1alpha1.ConversationFailed, wantReady: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonTemplateConflict,
			wantHistory: parleyv1alpha1.ReasonHistoryReady, wantAgentReason: parleyv1alpha1.ReasonTemplateConflict,
		},
		"a restart waiting out its backoff is recovering": {
			conv: testConv(historyUp, withAgent,
				withCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonRestartScheduled)),
			wantPhase: parleyv1alpha1.ConversationRecovering, wantReady: metav1.ConditionTrue, wantReason: parleyv1alpha1.ReasonActive,
			wantHistory: parleyv1alpha1.ReasonHistoryReady, wantAgentReason: parleyv1alpha1.ReasonRestartScheduled,
		},
		"a replacement pod not running yet is recovering": {
			conv: testConv(historyUp, withAgent,
				withCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonPodPending),
				func(c *parleyv1alpha1.Conversation) {
					c.Status.Agent = &parleyv1alpha1.AgentStatus{
						PodName: "c-agent-2", Attempt: 2, Restarts: 1,
						LastFailure: &parleyv1alpha1.AgentFailure{PodName: "c-agent-1", Reason: "Error"},
					}
				}),
			wantPhase: parleyv1alpha1.ConversationRecovering, wantReady: metav1.ConditionTrue, wantReason: parleyv1alpha1.ReasonActive,
			wantHistory: parleyv1alpha1.ReasonHistoryReady, wantAgentReason: parleyv1alpha1.ReasonPodPending,
		},
		"a running agent is active": {
			conv: testConv(historyUp, withAgent,
				withCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionTrue, parleyv1alpha1.ReasonPodRunning)),
			wantPhase: parleyv1alpha1.ConversationActive, wantReady: metav1.ConditionTrue, wantReason: parleyv1alpha1.ReasonActive,
			wantHistory: parleyv1alpha1.ReasonHistoryReady, wantAgentReason: parleyv1alpha1.ReasonPodRunning, wantAgentStatus: metav1.ConditionTrue,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.conv.DeepCopy()
			s := newConversationScope(tc.conv, created)
			s.expired = tc.expired
			summarizeConditions(s)
			unchanged(t, before, tc.conv)

			if s.status.Phase != tc.wantPhase {
				t.Errorf("phase %s, want %s", s.status.Phase, tc.wantPhase)
			}
			ready := mustCondition(t, s, parleyv1alpha1.ConditionReady)
			if ready.Status != tc.wantReady || ready.Reason != tc.wantReason {
				t.Errorf("Ready %s %s, want %s %s", ready.Status, ready.Reason, tc.wantReady, tc.wantReason)
			}
			if tc.wantMessage != "" && ready.Message != tc.wantMessage {
				t.Errorf("Ready message %q, want %q", ready.Message, tc.wantMessage)
			}
			if h := mustCondition(t, s, parleyv1alpha1.ConditionHistoryAvailable); h.Reason != tc.wantHistory {
				t.Errorf("HistoryAvailable reason %s, want %s", h.Reason, tc.wantHistory)
			}
			if tc.wantAgentReason == "" {
				// Without spec.agent the condition does not apply and is left out.
				if a := s.condition(parleyv1alpha1.ConditionAgentRunning); a != nil {
					t.Errorf("AgentRunning %s %s without spec.agent, want no condition", a.Status, a.Reason)
				}
			} else {
				wantAgentStatus := metav1.ConditionFalse
				if tc.wantAgentStatus != "" {
					wantAgentStatus = tc.wantAgentStatus
				}
				if a := mustCondition(t, s, parleyv1alpha1.ConditionAgentRunning); a.Reason != tc.wantAgentReason || a.Status != wantAgentStatus {
					t.Errorf("AgentRunning %s %s, want %s %s", a.Status, a.Reason, wantAgentStatus, tc.wantAgentReason)
				}
			}
			if s.status.ObservedGeneration != tc.conv.Generation {
				t.Errorf("observedGeneration %d, want %d", s.status.ObservedGeneration, tc.conv.Generation)
			}
		})
	}
}

// Ported from the Ginkgo specs of decideConversation, which the phases replaced: the pure part
// of a reconcile (session, expiry, conditions) run in the reconciler's order.

func TestPurePhasesFirstReconcile(t *testing.T) {
	conv := testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: dur(time.Hour)}))
	before := conv.DeepCopy()
	s, minted, d := decidePure(conv, created.Add(10*time.Minute))
	unchanged(t, before, conv)
	if !minted || d.expiredNow || d.deleteNow {
		t.Errorf("minted %v expiredNow %v deleteNow %v, want true false", minted, d.expiredNow, d.deleteNow)
	}
	if s.status.SessionID != mintedID || !s.status.ExpiresAt.Time.Equal(created.Add(time.Hour)) {
		t.Errorf("session %q expiresAt %v", s.status.SessionID, s.status.ExpiresAt)
	}
	if s.requeue != 50*time.Minute {
		t.Errorf("requeue %v, want exactly the time left (50m)", s.requeue)
	}
	if s.status.Phase != parleyv1alpha1.ConversationPending {
		t.Errorf("phase %s before the history exists, want Pending", s.status.Phase)
	}
	for _, c := range s.status.Conditions {
		if c.ObservedGeneration != 3 {
			t.Errorf("%s observedGeneration %d, want 3", c.Type, c.ObservedGeneration)
		}
	}
}

func TestPurePhasesIdempotent(t *testing.T) {
	conv := testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: dur(time.Hour)}),
		withCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady))
	for _, now := range []time.Time{created.Add(5 * time.Minute), created.Add(2 * time.Hour)} {
		first, _, _ := decidePure(conv, now)
		conv.Status = first.status
		again, minted, d := decidePure(conv, now)
		if !equality.Semantic.DeepEqual(again.status, conv.Status) {
			t.Errorf("at %v deciding again changed status:\n%+v\n%+v", now, conv.Status, again.status)
		}
		if minted || d.expiredNow {
			t.Errorf("at %v deciding again minted %v expiredNow %v", now, minted, d.expiredNow)
		}
	}
}

func TestPurePhasesExpiredStaysExpired(t *testing.T) {
	conv := testConv(withLifetime(parleyv1alpha1.LifetimeSpec{TTL: dur(time.Hour)}))
	s, _, d := decidePure(conv, created.Add(time.Hour))
	if !d.expiredNow || s.status.Phase != parleyv1alpha1.ConversationExpired || s.requeue != 0 {
		t.Fatalf("expiredNow %v phase %s requeue %v, want true Expired 0 (nothing due without deleteAfter)",
			d.expiredNow, s.status.Phase, s.requeue)
	}
	conv.Status = s.status
	conv.Spec.Lifetime.TTL = dur(48 * time.Hour)
	again, _, d := decidePure(conv, created.Add(2*time.Hour))
	if d.expiredNow || again.status.Phase != parleyv1alpha1.ConversationExpired || !again.status.ExpiresAt.Time.Equal(created.Add(time.Hour)) {
		t.Errorf("after raising the ttl: expiredNow %v phase %s expiresAt %v", d.expiredNow, again.status.Phase, again.status.ExpiresAt)
	}
}
