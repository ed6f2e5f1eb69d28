package conversation

// Turns groups the messages into turns: each assistant message with the RoleTool messages
// that follow it (before the next assistant message) and answer at least one of its calls.
// Turn numbers start at 1.
func Turns(messages []Message) []Turn {
	var turns []Turn
	for i := range messages {
		m := &messages[i]
		switch {
		case m.Role == RoleAssistant:
			turns = append(turns, Turn{Number: len(turns) + 1, Index: i, Assistant: *m})
		case m.Role == RoleTool && len(turns) > 0:
			last := &turns[len(turns)-1]
			if answersAny(m, last.Assistant.ToolUseIDs()) {
				last.ToolResults = append(last.ToolResults, *m)
			}
		}
	}
	return turns
}

// NumberTurns sets Message.Turn on every message, in place: an assistant message opens the
// next turn; user and system messages belong to the turn they prompt (the next one); tool
// messages belong to the turn whose calls they answer (the current one).
func NumberTurns(messages []Message) {
	turn := 0
	for i := range messages {
		switch messages[i].Role {
		case RoleAssistant:
			turn++
			messages[i].Turn = turn
		case RoleTool:
			messages[i].Turn = max(turn, 1)
		default:
			messages[i].Turn = turn + 1
		}
	}
}

func answersAny(m *Message, ids []string) bool {
	for _, r := range m.ToolResultIDs() {
		for _, id := range ids {
			if r == id {
				return true
			}
		}
	}
	return false
}
