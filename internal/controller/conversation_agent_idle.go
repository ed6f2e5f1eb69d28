package controller

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/metrics"
)

// Idle suspension scales an agent that waits for a person to zero and wakes it with the next
// message. Both halves are decided from the history, never from a request of the Session API:
//
//   - Asleep is AgentRunning=False with reason Idle and no pod in status.agent (the attempt and
//     the restart count stay). It is recorded in status only; spec is never written, so a
//     GitOps tool sees no drift.
//   - The agent goes to sleep when spec.agent.idle is set, its pod runs or waits to, the
//     history awaits a person (journal.View.AwaitsPerson) and the last activity is
//     idle.suspendAfter old. The pod is stopped the way suspend stops it (marked as Parley's
//     own deletion first): no crash is recorded, no restart counted, no Crash Checkpoint taken.
//   - It wakes when the history no longer awaits a person: a user message was appended. The
//     append reaches the reconcile through the activity hand-off (package session), which the
//     Session API hurries for a sleeping agent (Activity.Wake). The new pod is an ordinary
//     resume (PARLEY_RESUME=true) whose bundle holds the history as it is, the new message
//     included.
//
// What stops a pod for other reasons wins over both: spec.suspend, the expiry and a removed
// spec.agent are decided before (decideAgent), so a sleeping conversation still expires on
// its ttl or idle timeout and a suspended one is not woken.

// startWake is the cause of the pod a user message wakes.
const startWake agentStart = "wake"

// idleVerdict is what the idle rule says about the agent this reconcile.
type idleVerdict int

const (
	// idleNone: the rule does not apply; the agent phase decides as without it.
	idleNone idleVerdict = iota
	// idleSuspend: stop the pod (or record the gone one) and sleep.
	idleSuspend
	// idleAsleep: no pod, and none is needed yet.
	idleAsleep
	// idleWake: asleep, and a message waits for the agent: start a pod.
	idleWake
)

// decideIdle applies the idle rule: pure, from the scope (spec, status, the history's summary,
// now) and what was seen of the pod. It asks to look again when the suspension falls due.
func decideIdle(s *conversationScope, prev string, seen agentSeen) idleVerdict {
	st := s.status.Agent
	asleep := prev == parleyv1alpha1.ReasonIdle && (st == nil || st.PodName == "")
	idle := s.conv.Spec.Agent.Idle
	sum := s.summary
	switch {
	case asleep && idle == nil:
		return idleNone // idle suspension was turned off: the agent resumes as after a suspend
	case asleep && (sum == nil || sum.awaitsPerson):
		return idleAsleep // nothing for the agent, or the history unread this time: stay
	case asleep:
		return idleWake
	case idle == nil || sum == nil || !sum.awaitsPerson || seen.foreign:
		return idleNone
	}
	// A pod that crashed or completed is left to those rules; one Parley is already stopping
	// (seen as gone while status still names it) is this rule's own, its status write lost.
	if seen.exists && seen.obs.State != agentpod.Running && seen.obs.State != agentpod.Pending {
		return idleNone
	}
	if st == nil || st.PodName == "" {
		return idleNone // no pod started yet: the first start is not this rule's business
	}
	due := waitingSince(s).Add(idle.SuspendAfter.Duration)
	if s.now.Before(due) {
		s.requeueAt(due)
		return idleNone
	}
	return idleSuspend
}

// waitingSince is when the agent began to wait: the last activity, else the creation.
func waitingSince(s *conversationScope) time.Time {
	if a := s.status.LastActivityTime; a != nil {
		return a.Time
	}
	return s.conv.CreationTimestamp.Time
}

// applyIdle turns a verdict into the agent phase's plan and status; ok is false for idleNone.
func applyIdle(s *conversationScope, v idleVerdict, prev string, seen agentSeen, st *parleyv1alpha1.AgentStatus) (agentPlan, bool) {
	switch v {
	case idleSuspend:
		after := s.conv.Spec.Agent.Idle.SuspendAfter.Duration
		if prev != parleyv1alpha1.ReasonIdle {
			s.event(parleyv1alpha1.EventAgentSuspended, "Suspend", "agent pod %s stopped: the agent waited for a person for %s", st.PodName, after)
		}
		st.PodName, st.NextStartAt = "", nil
		setAsleep(s)
		return agentPlan{stop: seen.exists}, true
	case idleAsleep:
		setAsleep(s)
		return agentPlan{}, true
	case idleWake:
		return agentPlan{start: startWake}, true
	}
	return agentPlan{}, false
}

func setAsleep(s *conversationScope) {
	s.setCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonIdle,
		"the agent waits for a person; its pod is stopped until the next user message wakes it")
}

// observeWake counts a woken agent once its status is written: the wake latency runs from the
// activity that woke it (the append, as handed over or patched) to the new pod's creation.
func observeWake(s *conversationScope, now time.Time) {
	if s.agentStarted != startWake {
		return
	}
	from := s.activityAt
	if from.IsZero() {
		if s.status.LastActivityTime == nil {
			return
		}
		from = s.status.LastActivityTime.Time
	}
	metrics.WakeLatency.Observe(max(now.Sub(from), 0).Seconds())
}
