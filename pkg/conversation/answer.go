package conversation

// Streaming reports whether a block of the message is still being written.
func (m *Message) Streaming() bool {
	for i := range m.Blocks {
		if m.Blocks[i].Status == BlockPending {
			return true
		}
	}
	return false
}

// FinalAnswer reports whether the message ends the agent's turn: an assistant message that
// calls no tool and is no longer streaming. After it the agent waits for a person.
func (m *Message) FinalAnswer() bool {
	return m.Role == RoleAssistant && !m.HasToolUse() && !m.Streaming()
}
