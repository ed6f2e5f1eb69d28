package controller

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
)

// agentSeen is what the agent phase read about the current agent pod before deciding.
type agentSeen struct {
	// exists: status.agent.podName names a pod the API server has. obs classifies it.
	exists bool
	obs    agentpod.Observation
	// foreign: the pod is not controlled by this Conversation (someone else made it and
	// pointed status.agent.podName at it): Parley never stops or restarts it.
	foreign bool
	// podUID is the UID of the controlled pod: recorded in status.agent.podUID when status
	// does not hold it yet (a pod created by a manager that did not record it).
	podUID string
	// podTemplate is the template hash the pod was built from; template the spec's now.
	podTemplate, template string
	// crashTurn is the turn the agent was working on when it crashed (one past the last
	// complete turn); read only for a crash not yet recorded.
	crashTurn int64
}

// agentStart is the cause of a new agent pod.
type agentStart string

const (
	startFirst   agentStart = "start"   // the session's first pod
	startRestart agentStart = "restart" // after a crash, with the resume bundle
	startResume  agentStart = "resume"  // after a suspend, a completion or a failure the spec now allows
	startReplace agentStart = "replace" // a pod that cannot start, after its template changed
)

// agentPlan is what the agent phase does with the API server this reconcile; the status it
// implies is already in the scope.
type agentPlan struct {
	// stop removes the current pod (suspend, expiry, spec.agent removed, replace).
	stop bool
	// start creates the next pod, numbered status.agent.attempt+1.
	start agentStart
	// crashCheckpoint is the Crash Checkpoint to create for a newly recorded crash, at turn.
	crashCheckpoint string
	crashTurn       int64
}

// agentFailed reports whether the AgentRunning reason ends the agent's restarts.
func agentFailed(reason string) bool {
	return reason == parleyv1alpha1.ReasonMaxRestartsExceeded || reason == parleyv1alpha1.ReasonPoisonTurn
}

// crashCheckpointName names the Crash Checkpoint taken when the pod of an attempt crashed.
func crashCheckpointName(conv string, attempt int32) string {
	return childName(conv, fmt.Sprintf("crash-%d", attempt))
}

// decideAgent runs the agent phase's decision: from the spec, the expiry, the history and the
// current pod, it sets AgentRunning and status.agent and says which pod to stop or start.
func decideAgent(s *conversationScope, seen agentSeen) agentPlan {
	spec := s.conv.Spec.Agent
	st := s.status.Agent
	if st == nil {
		st = &parleyv1alpha1.AgentStatus{}
	}
	st = st.DeepCopy()
	defer func() {
		if spec != nil || st.PodName != "" || st.Attempt > 0 {
			s.status.Agent = st
		}
	}()
	cond := func(status metav1.ConditionStatus, reason, msg string, args ...any) {
		s.setCondition(parleyv1alpha1.ConditionAgentRunning, status, reason, fmt.Sprintf(msg, args...))
	}
	prev := ""
	if c := s.conv.Status.Conditions; c != nil {
		if p := meta.FindStatusCondition(c, parleyv1alpha1.ConditionAgentRunning); p != nil {
			prev = p.Reason
		}
	}

	// Reasons to have no pod at all, before anything is read into the pod's state: a pod
	// Parley deletes is never mistaken for a crash.
	stopping := ""
	switch {
	case spec == nil:
		stopping = parleyv1alpha1.ReasonNoAgent
		cond(metav1.ConditionFalse, stopping, "spec.agent was removed: Parley stops the agent pod it ran")
	case s.expired:
		stopping = parleyv1alpha1.ReasonAgentStopped
		cond(metav1.ConditionFalse, stopping, "the session expired; its agent pod is removed")
	case s.conv.Spec.IsSuspended():
		stopping = parleyv1alpha1.ReasonSuspended
		cond(metav1.ConditionFalse, stopping, "spec.suspend is true: the agent pod is removed and everything else kept")
	}
	if stopping != "" {
		if seen.foreign || (spec == nil && !seen.exists) {
			if spec == nil {
				// No agent and no pod of Parley's: the condition does not apply.
				meta.RemoveStatusCondition(&s.status.Conditions, parleyv1alpha1.ConditionAgentRunning)
			}
			return agentPlan{} // nothing of Parley's to stop, and status.agent is not Parley's
		}
		plan := agentPlan{stop: seen.exists}
		if seen.exists && prev != stopping && spec != nil {
			s.event(parleyv1alpha1.EventAgentStopped, "Stop", "agent pod %s removed: %s", st.PodName, stopping)
		}
		st.PodName, st.PodUID, st.NextStartAt = "", "", nil
		return plan
	}

	// An agent that exited 0 stays Completed when its finished pod is deleted afterwards
	// (kubectl delete, its namespace going, PodGC): nothing crashed, nothing is restarted.
	if prev == parleyv1alpha1.ReasonCompleted && !seen.foreign &&
		(!seen.exists || (seen.obs.State == agentpod.Crashed && seen.obs.Reason == parleyv1alpha1.AgentFailureDeleted)) {
		cond(metav1.ConditionFalse, parleyv1alpha1.ReasonCompleted, "agent pod %s exited 0 and was deleted afterwards; it is not restarted", st.PodName)
		return agentPlan{}
	}
	if plan, ok := applyIdle(s, decideIdle(s, prev, seen), prev, seen, st); ok {
		return plan
	}
	if !seen.exists {
		return decideWithoutPod(s, st, prev, seen, cond)
	}
	if seen.foreign {
		cond(metav1.ConditionFalse, parleyv1alpha1.ReasonPodPending, "pod %s is not controlled by this Conversation; Parley leaves it alone", st.PodName)
		return agentPlan{}
	}
	if st.PodUID == "" {
		st.PodUID = seen.podUID
	}

	obs := seen.obs
	switch obs.State {
	case agentpod.Pending:
		cond(metav1.ConditionFalse, parleyv1alpha1.ReasonPodPending, "agent pod %s is waiting to be scheduled or to start", st.PodName)
	case agentpod.Running:
		cond(metav1.ConditionTrue, parleyv1alpha1.ReasonPodRunning, "agent pod %s is running (attempt %d, %d restarts)", st.PodName, st.Attempt, st.Restarts)
	case agentpod.Blocked:
		if seen.podTemplate != seen.template {
			cond(metav1.ConditionFalse, parleyv1alpha1.ReasonPodPending, "agent pod %s could not start (%s) and the template changed: replacing it", st.PodName, obs.Reason)
			return agentPlan{stop: true, start: startReplace}
		}
		if prev != obs.Reason {
			s.warning(parleyv1alpha1.EventAgentNotStarted, "Start", "agent pod %s cannot start: %s (not an agent crash: no restart is spent)", st.PodName, obs.Reason)
		}
		cond(metav1.ConditionFalse, obs.Reason, "agent pod %s cannot start: %s; fix the template (a new pod replaces it) or the cluster", st.PodName, obs.Message)
	case agentpod.Completed:
		if seen.podTemplate != seen.template && prev == parleyv1alpha1.ReasonCompleted {
			cond(metav1.ConditionFalse, parleyv1alpha1.ReasonPodPending, "the agent completed and its template changed: starting it again")
			return agentPlan{start: startResume}
		}
		if prev != parleyv1alpha1.ReasonCompleted {
			s.event(parleyv1alpha1.EventAgentCompleted, "Complete", "agent pod %s exited 0; it is not restarted", st.PodName)
		}
		cond(metav1.ConditionFalse, parleyv1alpha1.ReasonCompleted, "agent pod %s exited 0; it is not restarted (change the template to run it again)", st.PodName)
	case agentpod.Crashed:
		return decideCrash(s, st, prev, seen, cond)
	}
	return agentPlan{}
}

// decideWithoutPod handles the states where no agent pod exists: none started yet, or the
// one status names is gone (deleted, and its deletion was not Parley's).
func decideWithoutPod(s *conversationScope, st *parleyv1alpha1.AgentStatus, prev string, seen agentSeen,
	cond func(metav1.ConditionStatus, string, string, ...any),
) agentPlan {
	if st.PodName != "" {
		// The pod vanished without a trace of its end: record it as deleted.
		seen.exists, seen.obs = true, agentpod.Observation{State: agentpod.Crashed, Reason: parleyv1alpha1.AgentFailureDeleted, At: s.now}
		return decideCrash(s, st, prev, seen, cond)
	}
	if h := s.condition(parleyv1alpha1.ConditionHistoryAvailable); h == nil || h.Status != metav1.ConditionTrue {
		cond(metav1.ConditionFalse, parleyv1alpha1.ReasonWaitingForHistory, "the agent pod starts once the history is available")
		return agentPlan{}
	}
	cause := startFirst
	if st.Attempt > 0 {
		cause = startResume
	}
	return agentPlan{start: cause}
}

// decideCrash records a crash once (by the failed pod's name), then waits out the backoff and
// restarts, or gives up for maxRestarts or a poison turn.
func decideCrash(s *conversationScope, st *parleyv1alpha1.AgentStatus, prev string, seen agentSeen,
	cond func(metav1.ConditionStatus, string, string, ...any),
) agentPlan {
	spec := s.conv.Spec.Agent
	policy := restartPolicy(spec)
	var plan agentPlan
	if st.LastFailure == nil || st.LastFailure.PodName != st.PodName {
		prevTurn, prevFailures := int64(0), int32(0)
		if st.LastFailure != nil {
			prevTurn, prevFailures = st.LastFailure.Turn, st.FailuresAtTurn
		}
		v := agentpod.AfterCrash(policy, st.Restarts, prevTurn, prevFailures, seen.crashTurn, seen.obs.At)
		at := metav1.NewTime(seen.obs.At)
		st.LastFailure = &parleyv1alpha1.AgentFailure{
			Reason: seen.obs.Reason, ExitCode: seen.obs.ExitCode, PodName: st.PodName, Message: seen.obs.Message,
			Turn: seen.crashTurn, Time: &at,
		}
		st.FailuresAtTurn = v.FailuresAtTurn
		s.warning(parleyv1alpha1.EventAgentCrashed, "Crash", "agent pod %s failed: %s, exit code %d, at turn %d",
			st.PodName, seen.obs.Reason, seen.obs.ExitCode, seen.crashTurn)
		s.agentCrashed = seen.obs.Reason
		if v.Restart {
			next := metav1.NewTime(v.StartAt)
			st.NextStartAt = &next
			if seen.crashTurn > 1 {
				plan.crashCheckpoint, plan.crashTurn = crashCheckpointName(s.conv.Name, st.Attempt), seen.crashTurn-1
			}
		} else {
			st.NextStartAt = nil
			s.warning(parleyv1alpha1.EventAgentFailed, "Fail", "%s", v.Message)
			s.agentFailed = v.Reason
			cond(metav1.ConditionFalse, v.Reason, "%s", v.Message)
			return plan
		}
		prev = ""
	}

	if agentFailed(prev) {
		last := meta.FindStatusCondition(s.conv.Status.Conditions, parleyv1alpha1.ConditionAgentRunning)
		// Raising maxRestarts lets a MaxRestartsExceeded agent go on; a new template gives a
		// poison turn another chance.
		switch {
		case prev == parleyv1alpha1.ReasonMaxRestartsExceeded && st.Restarts < policy.MaxRestarts:
		case seen.podTemplate != seen.template:
			st.Restarts, st.FailuresAtTurn = 0, 0
		default:
			cond(metav1.ConditionFalse, prev, "%s", last.Message)
			return plan
		}
		st.NextStartAt = nil
		cond(metav1.ConditionFalse, parleyv1alpha1.ReasonPodPending, "the spec allows the agent to go on: starting it again")
		plan.start = startRestart
		return plan
	}
	if st.NextStartAt != nil && s.now.Before(st.NextStartAt.Time) {
		cond(metav1.ConditionFalse, parleyv1alpha1.ReasonRestartScheduled, "agent pod %s failed (%s, exit code %d); restart %d of %d at %s",
			st.PodName, st.LastFailure.Reason, st.LastFailure.ExitCode, st.Restarts+1, policy.MaxRestarts, st.NextStartAt.UTC().Format(time.RFC3339))
		s.requeueAt(st.NextStartAt.Time)
		return plan
	}
	cond(metav1.ConditionFalse, parleyv1alpha1.ReasonPodPending, "restarting the agent after %s", st.LastFailure.Reason)
	plan.start = startRestart
	return plan
}

// restartPolicy reads spec.agent's restart settings with the CRD's defaults.
func restartPolicy(spec *parleyv1alpha1.AgentSpec) agentpod.Policy {
	return agentpod.Policy{MaxRestarts: spec.GetMaxRestarts(), Initial: spec.Backoff.GetInitial(), Max: spec.Backoff.GetMax()}
}
