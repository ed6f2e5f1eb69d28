package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
)

func withAgentStatus(st parleyv1alpha1.AgentStatus) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) { c.Status.Agent = &st }
}

func withRestarts(maxRestarts int32, initial time.Duration) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) {
		c.Spec.Agent.MaxRestarts = &maxRestarts
		c.Spec.Agent.Backoff = parleyv1alpha1.BackoffSpec{Initial: dur(initial), Max: dur(time.Hour)}
	}
}

func failure(pod string, turn int64) *parleyv1alpha1.AgentFailure {
	return &parleyv1alpha1.AgentFailure{Reason: parleyv1alpha1.AgentFailureError, ExitCode: 1, PodName: pod, Turn: turn, Time: &metav1.Time{Time: created}}
}

func TestDecideAgent(t *testing.T) {
	now := created.Add(time.Minute)
	historyUp := withCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady)
	agentWas := func(reason string) func(*parleyv1alpha1.Conversation) {
		return withCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, reason)
	}
	running := agentpod.Observation{State: agentpod.Running}
	crashed := agentpod.Observation{State: agentpod.Crashed, Reason: parleyv1alpha1.AgentFailureOOMKilled, ExitCode: 137, At: now.Add(-time.Second)}
	pod1 := parleyv1alpha1.AgentStatus{PodName: "c-agent-1", Attempt: 1}
	tests := map[string]struct {
		conv        *parleyv1alpha1.Conversation
		expired     bool
		seen        agentSeen
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantAbsent  bool // no AgentRunning condition at all
		wantPlan    agentPlan
		wantAgent   *parleyv1alpha1.AgentStatus // compared field by field where set
		wantRequeue time.Duration
		wantEvents  []string
	}{
		"no agent: no condition": {
			conv: testConv(historyUp), wantAbsent: true,
		},
		"no agent: the condition of a stopped agent goes": {
			conv: testConv(historyUp, agentWas(parleyv1alpha1.ReasonNoAgent)), wantAbsent: true,
		},
		"no agent: a pod someone else made is left alone": {
			conv: testConv(historyUp, withAgentStatus(pod1)), seen: agentSeen{exists: true, foreign: true, obs: running},
			wantAbsent: true, wantAgent: &pod1,
		},
		"agent removed from the spec: its pod is stopped": {
			conv: testConv(historyUp, withAgentStatus(pod1)), seen: agentSeen{exists: true, obs: running},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonNoAgent, wantPlan: agentPlan{stop: true},
			wantAgent: &parleyv1alpha1.AgentStatus{Attempt: 1},
		},
		"waits for the history": {
			conv: testConv(withAgent), wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonWaitingForHistory,
		},
		"the first pod": {
			conv: testConv(withAgent, historyUp), wantStatus: metav1.ConditionUnknown, wantPlan: agentPlan{start: startFirst},
		},
		"running": {
			conv: testConv(withAgent, historyUp, withAgentStatus(pod1)), seen: agentSeen{exists: true, obs: running, podTemplate: "h", template: "h"},
			wantStatus: metav1.ConditionTrue, wantReason: parleyv1alpha1.ReasonPodRunning,
		},
		"a crash is recorded, checkpointed, and the restart waits out the backoff": {
			conv:       testConv(withAgent, withRestarts(5, 10*time.Second), historyUp, withAgentStatus(pod1)),
			seen:       agentSeen{exists: true, obs: crashed, podTemplate: "h", template: "h", crashTurn: 4},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonRestartScheduled,
			wantPlan:    agentPlan{crashCheckpoint: "c-crash-1", crashTurn: 3},
			wantAgent:   &parleyv1alpha1.AgentStatus{PodName: "c-agent-1", Attempt: 1, FailuresAtTurn: 1, LastFailure: &parleyv1alpha1.AgentFailure{Reason: "OOMKilled", ExitCode: 137, PodName: "c-agent-1", Turn: 4}},
			wantRequeue: 9 * time.Second,
			wantEvents:  []string{parleyv1alpha1.EventAgentCrashed},
		},
		"a crash before any complete turn takes no Checkpoint": {
			conv:       testConv(withAgent, withRestarts(5, 10*time.Second), historyUp, withAgentStatus(pod1)),
			seen:       agentSeen{exists: true, obs: crashed, podTemplate: "h", template: "h", crashTurn: 1},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonRestartScheduled, wantRequeue: 9 * time.Second,
			wantEvents: []string{parleyv1alpha1.EventAgentCrashed},
		},
		"a recorded crash restarts once the backoff ends": {
			conv: testConv(withAgent, withRestarts(5, 10*time.Second), historyUp, agentWas(parleyv1alpha1.ReasonRestartScheduled),
				withAgentStatus(parleyv1alpha1.AgentStatus{
					PodName: "c-agent-1", Attempt: 1, LastFailure: failure("c-agent-1", 4), FailuresAtTurn: 1,
					NextStartAt: &metav1.Time{Time: now.Add(-time.Millisecond)},
				})),
			seen:       agentSeen{exists: true, obs: crashed, podTemplate: "h", template: "h"},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonPodPending, wantPlan: agentPlan{start: startRestart},
		},
		"a recorded crash is not recorded again": {
			conv: testConv(withAgent, withRestarts(5, 10*time.Second), historyUp, agentWas(parleyv1alpha1.ReasonRestartScheduled),
				withAgentStatus(parleyv1alpha1.AgentStatus{
					PodName: "c-agent-1", Attempt: 1, LastFailure: failure("c-agent-1", 4), FailuresAtTurn: 1,
					NextStartAt: &metav1.Time{Time: now.Add(5 * time.Second)},
				})),
			seen:       agentSeen{exists: true, obs: crashed, podTemplate: "h", template: "h"},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonRestartScheduled, wantRequeue: 5 * time.Second,
			wantAgent: &parleyv1alpha1.AgentStatus{PodName: "c-agent-1", Attempt: 1, FailuresAtTurn: 1},
		},
		"a pod that vanished is a Deleted crash": {
			conv:       testConv(withAgent, withRestarts(5, time.Second), historyUp, withAgentStatus(pod1)),
			seen:       agentSeen{crashTurn: 2},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonRestartScheduled, wantRequeue: time.Second,
			wantPlan:   agentPlan{crashCheckpoint: "c-crash-1", crashTurn: 1},
			wantAgent:  &parleyv1alpha1.AgentStatus{PodName: "c-agent-1", LastFailure: &parleyv1alpha1.AgentFailure{Reason: "Deleted", PodName: "c-agent-1", Turn: 2}},
			wantEvents: []string{parleyv1alpha1.EventAgentCrashed},
		},
		"maxRestarts reached fails the agent": {
			conv: testConv(withAgent, withRestarts(2, time.Second), historyUp,
				withAgentStatus(parleyv1alpha1.AgentStatus{PodName: "c-agent-3", Attempt: 3, Restarts: 2, LastFailure: failure("c-agent-2", 1), FailuresAtTurn: 1})),
			seen:       agentSeen{exists: true, obs: crashed, podTemplate: "h", template: "h", crashTurn: 7},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonMaxRestartsExceeded,
			wantEvents: []string{parleyv1alpha1.EventAgentCrashed, parleyv1alpha1.EventAgentFailed},
		},
		"the third crash in a row at one turn is a poison turn": {
			conv: testConv(withAgent, withRestarts(10, time.Second), historyUp,
				withAgentStatus(parleyv1alpha1.AgentStatus{PodName: "c-agent-3", Attempt: 3, Restarts: 2, LastFailure: failure("c-agent-2", 5), FailuresAtTurn: 2})),
			seen:       agentSeen{exists: true, obs: crashed, podTemplate: "h", template: "h", crashTurn: 5},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonPoisonTurn,
			wantAgent:  &parleyv1alpha1.AgentStatus{PodName: "c-agent-3", FailuresAtTurn: 3},
			wantEvents: []string{parleyv1alpha1.EventAgentCrashed, parleyv1alpha1.EventAgentFailed},
		},
		"a failed agent stays failed": {
			conv: testConv(withAgent, withRestarts(2, time.Second), historyUp, agentWas(parleyv1alpha1.ReasonMaxRestartsExceeded),
				withAgentStatus(parleyv1alpha1.AgentStatus{PodName: "c-agent-3", Attempt: 3, Restarts: 2, LastFailure: failure("c-agent-3", 7), FailuresAtTurn: 1})),
			seen:       agentSeen{exists: true, obs: crashed, podTemplate: "h", template: "h"},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonMaxRestartsExceeded,
		},
		"raising maxRestarts lets a failed agent go on": {
			conv: testConv(withAgent, withRestarts(3, time.Second), historyUp, agentWas(parleyv1alpha1.ReasonMaxRestartsExceeded),
				withAgentStatus(parleyv1alpha1.AgentStatus{PodName: "c-agent-3", Attempt: 3, Restarts: 2, LastFailure: failure("c-agent-3", 7), FailuresAtTurn: 1})),
			seen:       agentSeen{exists: true, obs: crashed, podTemplate: "h", template: "h"},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonPodPending, wantPlan: agentPlan{start: startRestart},
		},
		"a new template gives a poison turn another chance": {
			conv: testConv(withAgent, withRestarts(10, time.Second), historyUp, agentWas(parleyv1alpha1.ReasonPoisonTurn),
				withAgentStatus(parleyv1alpha1.AgentStatus{PodName: "c-agent-3", Attempt: 3, Restarts: 2, LastFailure: failure("c-agent-3", 5), FailuresAtTurn: 3})),
			seen:       agentSeen{exists: true, obs: crashed, podTemplate: "old", template: "new"},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonPodPending, wantPlan: agentPlan{start: startRestart},
			wantAgent: &parleyv1alpha1.AgentStatus{PodName: "c-agent-3"},
		},
		"an image pull error spends no restart": {
			conv:       testConv(withAgent, historyUp, withAgentStatus(pod1)),
			seen:       agentSeen{exists: true, obs: agentpod.Observation{State: agentpod.Blocked, Reason: parleyv1alpha1.ReasonImagePullFailed}, podTemplate: "h", template: "h"},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonImagePullFailed,
			wantAgent:  &parleyv1alpha1.AgentStatus{PodName: "c-agent-1", Attempt: 1},
			wantEvents: []string{parleyv1alpha1.EventAgentNotStarted},
		},
		"the UID of a pod created before it was recorded is recorded": {
			conv: testConv(withAgent, historyUp, withAgentStatus(pod1)), seen: agentSeen{exists: true, obs: running, podUID: "u1", podTemplate: "h", template: "h"},
			wantStatus: metav1.ConditionTrue, wantReason: parleyv1alpha1.ReasonPodRunning,
			wantAgent: &parleyv1alpha1.AgentStatus{PodName: "c-agent-1", PodUID: "u1", Attempt: 1},
		},
		"suspend forgets the pod's UID with its name": {
			conv: testConv(withAgent, historyUp, withAgentStatus(parleyv1alpha1.AgentStatus{PodName: "c-agent-1", PodUID: "u1", Attempt: 1}),
				func(c *parleyv1alpha1.Conversation) { c.Spec.Suspend = ptrTo(true) }),
			seen:       agentSeen{exists: true, obs: running, podUID: "u1"},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonSuspended, wantPlan: agentPlan{stop: true},
			wantAgent:  &parleyv1alpha1.AgentStatus{Attempt: 1},
			wantEvents: []string{parleyv1alpha1.EventAgentStopped},
		},
		"a pod that cannot start is replaced once the template changes": {
			conv:       testConv(withAgent, historyUp, withAgentStatus(pod1)),
			seen:       agentSeen{exists: true, obs: agentpod.Observation{State: agentpod.Blocked, Reason: parleyv1alpha1.ReasonImagePullFailed}, podTemplate: "old", template: "new"},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonPodPending, wantPlan: agentPlan{stop: true, start: startReplace},
		},
		"exit 0 is completed, not restarted": {
			conv:       testConv(withAgent, historyUp, withAgentStatus(pod1)),
			seen:       agentSeen{exists: true, obs: agentpod.Observation{State: agentpod.Completed}, podTemplate: "h", template: "h"},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonCompleted,
			wantEvents: []string{parleyv1alpha1.EventAgentCompleted},
		},
		"a completed agent runs again after a template change": {
			conv:       testConv(withAgent, historyUp, withAgentStatus(pod1), agentWas(parleyv1alpha1.ReasonCompleted)),
			seen:       agentSeen{exists: true, obs: agentpod.Observation{State: agentpod.Completed}, podTemplate: "old", template: "new"},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonPodPending, wantPlan: agentPlan{start: startResume},
		},
		"a completed agent whose pod is deleted afterwards stays completed": {
			conv:       testConv(withAgent, historyUp, withAgentStatus(pod1), agentWas(parleyv1alpha1.ReasonCompleted)),
			seen:       agentSeen{exists: true, obs: agentpod.Observation{State: agentpod.Crashed, Reason: parleyv1alpha1.AgentFailureDeleted, At: now}, podTemplate: "h", template: "h", crashTurn: 3},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonCompleted,
			wantAgent: &pod1,
		},
		"a completed agent whose pod is gone stays completed": {
			conv:       testConv(withAgent, historyUp, withAgentStatus(pod1), agentWas(parleyv1alpha1.ReasonCompleted)),
			seen:       agentSeen{crashTurn: 3},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonCompleted,
			wantAgent: &pod1,
		},
		"suspend removes the pod": {
			conv:       testConv(withAgent, historyUp, withAgentStatus(pod1), func(c *parleyv1alpha1.Conversation) { c.Spec.Suspend = ptrTo(true) }),
			seen:       agentSeen{exists: true, obs: running},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonSuspended, wantPlan: agentPlan{stop: true},
			wantAgent:  &parleyv1alpha1.AgentStatus{Attempt: 1},
			wantEvents: []string{parleyv1alpha1.EventAgentStopped},
		},
		"resuming after a suspend starts the next attempt": {
			conv:       testConv(withAgent, historyUp, withAgentStatus(parleyv1alpha1.AgentStatus{Attempt: 1}), agentWas(parleyv1alpha1.ReasonSuspended)),
			wantStatus: metav1.ConditionUnknown, wantPlan: agentPlan{start: startResume},
		},
		"expiry removes the pod": {
			conv: testConv(withAgent, historyUp, withAgentStatus(pod1)), expired: true,
			seen:       agentSeen{exists: true, obs: running},
			wantStatus: metav1.ConditionFalse, wantReason: parleyv1alpha1.ReasonAgentStopped, wantPlan: agentPlan{stop: true},
			wantEvents: []string{parleyv1alpha1.EventAgentStopped},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.conv.DeepCopy()
			s := newConversationScope(tc.conv, now)
			s.expired = tc.expired
			plan := decideAgent(s, tc.seen)
			unchanged(t, before, tc.conv)
			if plan != tc.wantPlan {
				t.Errorf("plan %+v, want %+v", plan, tc.wantPlan)
			}
			c := s.condition(parleyv1alpha1.ConditionAgentRunning)
			switch {
			case tc.wantAbsent:
				if c != nil {
					t.Errorf("AgentRunning %s %s, want no condition", c.Status, c.Reason)
				}
			case tc.wantStatus == metav1.ConditionUnknown: // the start step sets it
				if c != nil && c.Message != "before" {
					t.Errorf("AgentRunning set to %s %s before the pod exists", c.Status, c.Reason)
				}
			case c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason:
				t.Errorf("AgentRunning %+v, want %s %s", c, tc.wantStatus, tc.wantReason)
			}
			if s.requeue != tc.wantRequeue {
				t.Errorf("requeue %v, want %v", s.requeue, tc.wantRequeue)
			}
			events := make([]string, 0, len(s.events))
			for _, e := range s.events {
				events = append(events, e.reason)
			}
			if len(events) != len(tc.wantEvents) {
				t.Errorf("events %v, want %v", events, tc.wantEvents)
			} else {
				for i := range events {
					if events[i] != tc.wantEvents[i] {
						t.Errorf("events %v, want %v", events, tc.wantEvents)
					}
				}
			}
			if w := tc.wantAgent; w != nil {
				got := s.status.Agent
				if got == nil {
					t.Fatal("status.agent not set")
				}
				if got.PodName != w.PodName || got.PodUID != w.PodUID || (w.Attempt != 0 && got.Attempt != w.Attempt) || (w.FailuresAtTurn != 0 && got.FailuresAtTurn != w.FailuresAtTurn) {
					t.Errorf("status.agent %+v, want %+v", got, w)
				}
				if wf := w.LastFailure; wf != nil {
					gf := got.LastFailure
					if gf == nil || gf.Reason != wf.Reason || gf.ExitCode != wf.ExitCode || gf.PodName != wf.PodName || gf.Turn != wf.Turn || gf.Time == nil {
						t.Errorf("lastFailure %+v, want %+v", gf, wf)
					}
				}
			}
		})
	}
}
