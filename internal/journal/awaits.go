package journal

import "github.com/parley-dev/parley/pkg/conversation"

// AwaitsPerson reports whether the agent waits for a person: nothing of the main thread's last
// message is still streaming, and either that message is a final assistant answer (it calls no
// tool) or the agent reported session:idle after it. An empty thread awaits nobody: the agent
// has not begun.
func (v *View) AwaitsPerson() bool {
	msgs := v.State.Messages
	if len(msgs) == 0 {
		return false
	}
	last := &msgs[len(msgs)-1]
	for i := range last.Blocks {
		if last.Blocks[i].Status == conversation.BlockPending {
			return false
		}
	}
	if last.Role == conversation.RoleAssistant && !last.HasToolUse() {
		return true
	}
	return v.IdleSeq > uint64(last.Seq)
}
