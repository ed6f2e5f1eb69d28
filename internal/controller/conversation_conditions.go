package controller

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// summarizeConditions derives AgentRunning (when the agent phase did not run), Ready and the
// phase from the conditions the phases set, once per reconcile, and stamps observedGeneration.
func summarizeConditions(s *conversationScope) {
	if s.condition(parleyv1alpha1.ConditionAgentRunning) == nil && s.conv.Spec.Agent != nil {
		s.setCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonWaitingForHistory,
			"the agent pod starts once the history is available")
	}
	agentReason := ""
	agent := s.condition(parleyv1alpha1.ConditionAgentRunning)
	if agent != nil {
		agentReason = agent.Reason
	}

	hist := s.condition(parleyv1alpha1.ConditionHistoryAvailable)
	historyUp := hist != nil && hist.Status == metav1.ConditionTrue
	suspended := s.conv.Spec.IsSuspended()
	switch {
	case s.expired:
		s.setCondition(parleyv1alpha1.ConditionReady, metav1.ConditionFalse, parleyv1alpha1.ReasonExpired,
			"the session expired; create a new Conversation or fork this one from a Checkpoint to continue")
		s.status.Phase = parleyv1alpha1.ConversationExpired
	case !historyUp:
		reason, msg := parleyv1alpha1.ReasonInitializing, "the history is being set up"
		if hist != nil {
			reason, msg = hist.Reason, "history unavailable: "+hist.Message
		}
		s.setCondition(parleyv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
		s.status.Phase = parleyv1alpha1.ConversationPending
	case agentFailed(agentReason) || agentReason == parleyv1alpha1.ReasonTemplateConflict || agentReason == parleyv1alpha1.ReasonInvalidTemplate || agentReason == parleyv1alpha1.ReasonBundleTooLarge:
		s.setCondition(parleyv1alpha1.ConditionReady, metav1.ConditionFalse, agentReason, "agent: "+agent.Message)
		s.status.Phase = parleyv1alpha1.ConversationFailed
	default:
		s.setCondition(parleyv1alpha1.ConditionReady, metav1.ConditionTrue, parleyv1alpha1.ReasonActive,
			"the session is live and its history available")
		s.status.Phase = parleyv1alpha1.ConversationActive
		switch {
		case suspended:
			s.status.Phase = parleyv1alpha1.ConversationSuspended
		case agentReason == parleyv1alpha1.ReasonRestartScheduled,
			agentReason == parleyv1alpha1.ReasonPodPending && restarting(s.status.Agent):
			s.status.Phase = parleyv1alpha1.ConversationRecovering
		}
	}
	if hist == nil {
		s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionUnknown, parleyv1alpha1.ReasonInitializing,
			"the history is created once the session id is recorded")
	}
	s.status.ObservedGeneration = s.conv.Generation
}

// restarting: the current pod replaced a crashed one and does not run yet.
func restarting(st *parleyv1alpha1.AgentStatus) bool {
	return st != nil && st.Restarts > 0 && st.LastFailure != nil && st.LastFailure.PodName != st.PodName
}
