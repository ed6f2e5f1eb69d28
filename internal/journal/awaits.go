package journal

// AwaitsPerson reports whether the agent waits for a person: the main thread's last message is
// a final answer (conversation.Message.FinalAnswer), or the agent reported session:idle after
// it and nothing of it streams since. An empty thread awaits nobody: the agent has not begun.
func (v *View) AwaitsPerson() bool {
	msgs := v.State.Messages
	if len(msgs) == 0 {
		return false
	}
	last := &msgs[len(msgs)-1]
	return last.FinalAnswer() || (v.IdleSeq > uint64(last.Seq) && !last.Streaming())
}
