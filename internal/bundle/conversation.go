package bundle

import (
	"path"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
)

// MountPath is where a Conversation's agent pods find their bundle.
func MountPath(conv *parleyv1alpha1.Conversation) string {
	return conv.Spec.Agent.GetResumeMountPath()
}

// InputFor is the Input of a Conversation's bundle: what the controller mounts in an agent pod
// and what the Session API's GET …/resume returns, from the same place so they cannot drift.
// state is the conversation as the pod resumes it (already cut at a turn); attempt is the
// resume attempt (0 for the first pod); checkpoint the Checkpoint the state comes from, if any.
func InputFor(conv *parleyv1alpha1.Conversation, state *conversation.State, attempt int32, checkpoint string) Input {
	in := Input{
		State: state, SessionID: conv.Status.SessionID, Conversation: conv.Name, Namespace: conv.Namespace,
		Checkpoint: checkpoint, Attempt: attempt, Adapter: conv.Spec.Agent.GetAdapter(),
	}
	a := conv.Spec.Agent
	if a == nil {
		return in
	}
	if len(a.Template.Spec.Containers) > 0 {
		in.WorkingDir = a.Template.Spec.Containers[0].WorkingDir
	}
	if in.Adapter == parleyv1alpha1.AdapterClaudeAgentSDK {
		in.ClaudeConfigDir = path.Join(MountPath(conv), ClaudeDir)
	}
	return in
}
