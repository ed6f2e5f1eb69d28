package journal

import (
	"errors"
	"fmt"

	"github.com/parley-dev/parley/pkg/conversation"
)

// ErrTurnNotFound: the state has not reached the requested turn, or it is not complete (a tool
// call of it has no result yet).
var ErrTurnNotFound = errors.New("journal: turn not found")

// Cut returns the conversation as it stood at the end of a turn: the messages numbered up to
// it, the subagent threads their tool calls started, the raw records among them, and every
// adapter state. turn 0 asks for the latest complete turn: the whole state when no tool call
// is waiting for its result, else everything before the turn that waits. It also returns the
// turn it cut at. The result's slices are its own; the messages' blocks are shared with s and
// must be treated as read-only.
func Cut(s *conversation.State, turn int) (conversation.State, int, error) {
	msgs := s.Messages
	complete := completeThrough(msgs)
	var keep int // messages kept: a prefix
	switch {
	case turn == 0 && complete == len(msgs):
		keep = len(msgs)
		turn = turnsIn(msgs)
	case turn == 0:
		// Cut before the turn whose call is unanswered. A transcript may answer an earlier
		// call only after that turn began (the user spoke while a tool ran): cut again until
		// every call kept has its result.
		keep = complete
		for c := completeThrough(msgs[:keep]); c != keep; c = completeThrough(msgs[:keep]) {
			keep = c
		}
		turn = turnsIn(msgs[:keep])
	case turn > turnsIn(msgs):
		return conversation.State{}, 0, fmt.Errorf("%w: turn %d requested, the conversation has %d", ErrTurnNotFound, turn, turnsIn(msgs))
	default:
		keep = prefixThrough(msgs, turn)
		if completeThrough(msgs[:keep]) != keep {
			return conversation.State{}, 0, fmt.Errorf("%w: turn %d has a tool call without a result", ErrTurnNotFound, turn)
		}
	}

	out := *s
	out.Messages = cloneMessages(msgs[:keep])
	kept := map[string]bool{}
	calls := map[string]bool{}
	for i := range out.Messages {
		kept[out.Messages[i].ID] = true
		for _, id := range out.Messages[i].ToolUseIDs() {
			calls[id] = true
		}
	}
	out.Subagents = nil
	for _, sub := range s.Subagents {
		if sub.ToolUseID == "" || calls[sub.ToolUseID] {
			out.Subagents = append(out.Subagents, sub)
		}
	}
	out.Records = nil
	for _, r := range s.Records {
		if r.Thread != "" || r.AfterID == "" || kept[r.AfterID] {
			out.Records = append(out.Records, r)
		}
	}
	out.Adapters = append(conversation.AdapterStates(nil), s.Adapters...)
	return out, turn, nil
}

// completeThrough returns the index of the first message whose turn has a tool call with no
// result in msgs, or len(msgs) when every call is answered.
func completeThrough(msgs []conversation.Message) int {
	open := map[string]int{} // unanswered call id -> index of its message
	for i := range msgs {
		for _, id := range msgs[i].ToolUseIDs() {
			open[id] = i
		}
		for _, id := range msgs[i].ToolResultIDs() {
			delete(open, id)
		}
	}
	first := len(msgs)
	for _, i := range open {
		first = min(first, i)
	}
	// The whole turn of that message is incomplete: back up to its first message.
	if first < len(msgs) {
		t := msgs[first].Turn
		for first > 0 && msgs[first-1].Turn == t {
			first--
		}
	}
	return first
}

// prefixThrough is how many leading messages belong to turns up to turn (turn numbers never
// decrease along the thread).
func prefixThrough(msgs []conversation.Message, turn int) int {
	n := 0
	for n < len(msgs) && msgs[n].Turn <= turn {
		n++
	}
	return n
}

func turnsIn(msgs []conversation.Message) int {
	n := 0
	for i := range msgs {
		if msgs[i].Role == conversation.RoleAssistant {
			n++
		}
	}
	return n
}

func cloneMessages(msgs []conversation.Message) []conversation.Message {
	return append([]conversation.Message(nil), msgs...)
}
