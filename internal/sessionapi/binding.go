package sessionapi

import (
	"fmt"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/wire"
)

// checkPodBinding confines a token bound to a pod to the conversation whose agent pod that
// is, or returns a 403. The pod is known by its UID (status.agent.podUID, recorded when Parley
// created it), not only its name: names are predictable, and a pod someone else created under
// the agent pod's name, before Parley or after the agent pod was deleted, is another pod with
// another UID. A token not bound to a pod is left to RBAC.
func checkPodBinding(c *caller, conv *parleyv1alpha1.Conversation) *wire.Problem {
	if c.podKey == "" {
		return nil
	}
	agent := conv.Status.Agent
	switch {
	case agent == nil || agent.PodName == "" || conv.Namespace+"/"+agent.PodName != c.podKey:
		return problem(403, wire.ProblemForbidden, "Forbidden",
			fmt.Sprintf("the token belongs to pod %s, which is not the agent pod of conversation %s/%s", c.podKey, conv.Namespace, conv.Name))
	case agent.PodUID == "" || agent.PodUID != c.podUID:
		return problem(403, wire.ProblemForbidden, "Forbidden",
			fmt.Sprintf("the token belongs to a pod named %s that is not the agent pod Parley created for conversation %s/%s (another pod UID)",
				c.podKey, conv.Namespace, conv.Name))
	}
	return nil
}
