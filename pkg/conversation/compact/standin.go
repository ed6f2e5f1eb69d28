package compact

import (
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
)

// TruncationNotice is the text of the message SlidingWindow puts where it dropped history.
const TruncationNotice = "[Earlier messages of this conversation were removed to fit the model's context window. " +
	"Continue from the messages that follow.]"

// SummaryPrefix opens the message that holds a summary of folded history.
const SummaryPrefix = "Summary of the earlier part of this conversation, which was compacted:\n\n"

// standIn builds the message that replaces folded, the messages removed from the front of the
// history: it takes the Seq of the last of them and an ID derived from that message's ID.
func standIn(folded []conversation.Message, kind string, flag conversation.Flags, text string, now time.Time) conversation.Message {
	last := &folded[len(folded)-1]
	return conversation.Message{
		ID:        "parley-" + kind + "-" + last.ID,
		Seq:       last.Seq,
		Role:      conversation.RoleSystem,
		Blocks:    []conversation.Block{{Type: conversation.BlockText, Text: text}},
		Turn:      last.Turn,
		CreatedAt: now,
		Flags:     flag,
	}
}

// withMessages returns a shallow copy of s holding messages.
func withMessages(s *conversation.State, messages []conversation.Message) *conversation.State {
	out := *s
	out.Messages = messages
	return &out
}

// replaceFront returns a new slice: head, then messages[cut:].
func replaceFront(head conversation.Message, messages []conversation.Message, cut int) []conversation.Message {
	out := make([]conversation.Message, 0, len(messages)-cut+1)
	out = append(out, head)
	return append(out, messages[cut:]...)
}

// stateCosts counts every message once and the rest of the state (system message, reply
// priming) as fixed, relying on CountState being that sum (tokens.Counter's contract): one
// pass over the messages instead of one per figure, which matters at 100k messages.
func stateCosts(p *Policy, s *conversation.State) (fixed int, costs []int, total int) {
	fixed = p.Counter.CountState(&conversation.State{System: s.System})
	costs = make([]int, len(s.Messages))
	total = fixed
	for i := range s.Messages {
		costs[i] = p.Counter.CountMessage(&s.Messages[i])
		total += costs[i]
	}
	return fixed, costs, total
}
