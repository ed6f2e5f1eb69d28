package v1alpha1

import "k8s.io/apimachinery/pkg/api/meta"

// AgentAsleep reports whether the Conversation's agent is suspended while idle: AgentRunning
// is False with reason Idle and no pod runs for it. The next user message wakes it.
func (c *Conversation) AgentAsleep() bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, ConditionAgentRunning)
	return cond != nil && cond.Reason == ReasonIdle && (c.Status.Agent == nil || c.Status.Agent.PodName == "")
}
