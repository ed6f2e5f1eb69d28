package conversation

// Events returns the events that rebuild the state's messages and subagent threads when
// reduced, in order, onto a state holding only its session fields (see Shell). The Session
// API can replay them to a follower; tests use them to check the reducer against importers.
func Events(s *State) []Event {
	var events []Event
	events = appendThreadEvents(events, MainThread, s.Messages)
	return appendSubagentEvents(events, MainThread, s.Subagents)
}

// Shell returns the state without its messages and subagents: what Events replays onto.
func Shell(s *State) State {
	out := *s
	out.Messages, out.Subagents = nil, nil
	return out
}

func appendThreadEvents(events []Event, thread string, msgs []Message) []Event {
	for i := range msgs {
		header := msgs[i]
		header.Blocks = nil
		events = append(events, Event{Type: EventBlockUpsert, ConversationID: thread, Message: &header})
		for k := range msgs[i].Blocks {
			b := msgs[i].Blocks[k]
			events = append(events, Event{Type: EventBlockUpsert, ConversationID: thread, Message: &Message{ID: header.ID}, Block: &b})
		}
	}
	return events
}

func appendSubagentEvents(events []Event, parent string, subs []Subagent) []Event {
	for i := range subs {
		sub := &subs[i]
		key := sub.ToolUseID
		if key == "" {
			key = sub.AgentID
		}
		events = append(events, Event{
			Type: EventSubagentSpawned, ConversationID: parent,
			ToolUseID: sub.ToolUseID, AgentID: sub.AgentID, Description: sub.Description,
		})
		events = appendThreadEvents(events, key, sub.Messages)
		events = appendSubagentEvents(events, key, sub.Subagents)
		if sub.Status != SubagentRunning && sub.Status != "" {
			events = append(events, Event{
				Type: EventSubagentCompleted, ConversationID: parent,
				ToolUseID: sub.ToolUseID, AgentID: sub.AgentID, Status: sub.Status,
			})
		}
	}
	return events
}
