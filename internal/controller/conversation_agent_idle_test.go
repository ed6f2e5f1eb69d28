package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
)

func withIdle(after time.Duration) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) {
		c.Spec.Agent.Idle = &parleyv1alpha1.IdleSpec{SuspendAfter: metav1.Duration{Duration: after}}
	}
}

func activeAt(t time.Time) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) { c.Status.LastActivityTime = &metav1.Time{Time: t} }
}

// The idle rule, decided without an API server at an injected time: an agent that waits for a
// person for suspendAfter is stopped and sleeps (no crash, no restart, no Checkpoint); a user
// message wakes it; suspend, expiry and a crash keep their own rules.
func TestDecideIdle(t *testing.T) {
	now := created.Add(time.Hour)
	historyUp := withCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady)
	agentWas := func(reason string) func(*parleyv1alpha1.Conversation) {
		return withCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, reason)
	}
	running := agentSeen{exists: true, obs: agentpod.Observation{State: agentpod.Running}, podTemplate: "h", template: "h"}
	pod := withAgentStatus(parleyv1alpha1.AgentStatus{PodName: "c-agent-2", Attempt: 2, Restarts: 1})
	slept := withAgentStatus(parleyv1alpha1.AgentStatus{Attempt: 2, Restarts: 1})
	waiting, asked := &historySummary{awaitsPerson: true}, &historySummary{}
	tests := map[string]struct {
		conv        *parleyv1alpha1.Conversation
		summary     *historySummary
		expired     bool
		seen        agentSeen
		wantReason  string // "" for a start (the start step sets the condition)
		wantPlan    agentPlan
		wantPod     string
		wantRequeue time.Duration
		wantEvents  []string
	}{
		"waiting, not long enough: runs, and looks again when due": {
			conv:    testConv(withAgent, withIdle(10*time.Minute), historyUp, pod, activeAt(now.Add(-4*time.Minute))),
			summary: waiting, seen: running, wantReason: parleyv1alpha1.ReasonPodRunning, wantPod: "c-agent-2", wantRequeue: 6 * time.Minute,
		},
		"waiting for suspendAfter: the pod is stopped and the agent sleeps": {
			conv:    testConv(withAgent, withIdle(10*time.Minute), historyUp, pod, activeAt(now.Add(-10*time.Minute))),
			summary: waiting, seen: running, wantReason: parleyv1alpha1.ReasonIdle, wantPlan: agentPlan{stop: true},
			wantEvents: []string{parleyv1alpha1.EventAgentSuspended},
		},
		"waiting since creation when nothing was appended": {
			conv:    testConv(withAgent, withIdle(30*time.Minute), historyUp, pod),
			summary: waiting, seen: running, wantReason: parleyv1alpha1.ReasonIdle, wantPlan: agentPlan{stop: true},
			wantEvents: []string{parleyv1alpha1.EventAgentSuspended},
		},
		"a pending pod of a waiting agent is stopped too": {
			conv:    testConv(withAgent, withIdle(time.Minute), historyUp, pod, activeAt(now.Add(-time.Hour))),
			summary: waiting, seen: agentSeen{exists: true, obs: agentpod.Observation{State: agentpod.Pending}},
			wantReason: parleyv1alpha1.ReasonIdle, wantPlan: agentPlan{stop: true}, wantEvents: []string{parleyv1alpha1.EventAgentSuspended},
		},
		"working on a question: runs however long": {
			conv:    testConv(withAgent, withIdle(time.Minute), historyUp, pod, activeAt(now.Add(-time.Hour))),
			summary: asked, seen: running, wantReason: parleyv1alpha1.ReasonPodRunning, wantPod: "c-agent-2",
		},
		"without idle: a waiting agent runs": {
			conv:    testConv(withAgent, historyUp, pod, activeAt(now.Add(-time.Hour))),
			summary: waiting, seen: running, wantReason: parleyv1alpha1.ReasonPodRunning, wantPod: "c-agent-2",
		},
		"history unread this time: nothing is stopped on a guess": {
			conv: testConv(withAgent, withIdle(time.Minute), historyUp, pod, activeAt(now.Add(-time.Hour))),
			seen: running, wantReason: parleyv1alpha1.ReasonPodRunning, wantPod: "c-agent-2",
		},
		"a suspension whose status write was lost is not a crash": {
			conv:    testConv(withAgent, withIdle(time.Minute), historyUp, pod, activeAt(now.Add(-time.Hour))),
			summary: waiting, seen: agentSeen{crashTurn: 3}, wantReason: parleyv1alpha1.ReasonIdle,
			wantEvents: []string{parleyv1alpha1.EventAgentSuspended},
		},
		"a crash while waiting is still a crash": {
			conv:    testConv(withAgent, withIdle(time.Minute), withRestarts(5, time.Second), historyUp, pod, activeAt(now.Add(-time.Hour))),
			summary: waiting, seen: agentSeen{exists: true, obs: agentpod.Observation{State: agentpod.Crashed, Reason: parleyv1alpha1.AgentFailureError, ExitCode: 1, At: now}, crashTurn: 1},
			wantReason: parleyv1alpha1.ReasonRestartScheduled, wantPod: "c-agent-2", wantRequeue: 2 * time.Second, // the second restart's backoff
			wantEvents: []string{parleyv1alpha1.EventAgentCrashed},
		},
		"asleep and still waiting: stays asleep, nothing announced": {
			conv:    testConv(withAgent, withIdle(time.Minute), historyUp, slept, agentWas(parleyv1alpha1.ReasonIdle), activeAt(now.Add(-time.Hour))),
			summary: waiting, wantReason: parleyv1alpha1.ReasonIdle,
		},
		"asleep, history unread: stays asleep": {
			conv:       testConv(withAgent, withIdle(time.Minute), historyUp, slept, agentWas(parleyv1alpha1.ReasonIdle)),
			wantReason: parleyv1alpha1.ReasonIdle,
		},
		"asleep, a user message: woken": {
			conv:    testConv(withAgent, withIdle(time.Minute), historyUp, slept, agentWas(parleyv1alpha1.ReasonIdle), activeAt(now)),
			summary: asked, wantPlan: agentPlan{start: startWake},
		},
		"asleep, idle turned off: resumed": {
			conv:    testConv(withAgent, historyUp, slept, agentWas(parleyv1alpha1.ReasonIdle)),
			summary: waiting, wantPlan: agentPlan{start: startResume},
		},
		"asleep and suspended by hand: suspend wins over a message": {
			conv:    testConv(withAgent, withIdle(time.Minute), historyUp, slept, agentWas(parleyv1alpha1.ReasonIdle), func(c *parleyv1alpha1.Conversation) { c.Spec.Suspend = ptrTo(true) }),
			summary: asked, wantReason: parleyv1alpha1.ReasonSuspended,
		},
		"asleep and expired: stays down": {
			conv:    testConv(withAgent, withIdle(time.Minute), historyUp, slept, agentWas(parleyv1alpha1.ReasonIdle)),
			summary: asked, expired: true, wantReason: parleyv1alpha1.ReasonAgentStopped,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.conv.DeepCopy()
			s := newConversationScope(tc.conv, now)
			s.expired, s.summary = tc.expired, tc.summary
			plan := decideAgent(s, tc.seen)
			unchanged(t, before, tc.conv)
			if plan != tc.wantPlan {
				t.Errorf("plan %+v, want %+v", plan, tc.wantPlan)
			}
			c := s.condition(parleyv1alpha1.ConditionAgentRunning)
			switch {
			case tc.wantReason == "": // the start step sets it
			case c == nil || c.Reason != tc.wantReason:
				t.Errorf("AgentRunning %+v, want reason %s", c, tc.wantReason)
			}
			if s.requeue != tc.wantRequeue {
				t.Errorf("requeue %v, want %v", s.requeue, tc.wantRequeue)
			}
			events := make([]string, 0, len(s.events))
			for _, e := range s.events {
				events = append(events, e.reason)
			}
			if len(events) != len(tc.wantEvents) || (len(events) > 0 && events[0] != tc.wantEvents[0]) {
				t.Errorf("events %v, want %v", events, tc.wantEvents)
			}
			// The attempt and the restarts are kept whatever the rule does.
			if st := s.status.Agent; st == nil || st.PodName != tc.wantPod || st.Attempt != 2 || st.Restarts != 1 {
				t.Errorf("status.agent %+v, want pod %q, attempt 2, 1 restart", st, tc.wantPod)
			}
		})
	}
}
