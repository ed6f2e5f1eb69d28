package compact

import (
	"errors"

	"github.com/parley-dev/parley/pkg/conversation"
)

var errNilState = errors.New("compact: nil state")

// SlidingWindow keeps the system message and the newest messages that fit Policy.Budget, and
// puts a truncation notice (TruncationNotice) where the older ones were. It cuts only between
// exchange groups (see the package documentation) and always keeps the last
// KeepRecentMessages, even when they alone exceed the budget. A state that fits the budget,
// or that has nothing to drop, is returned unchanged.
func SlidingWindow(s *conversation.State, p Policy) (*conversation.State, Record, error) {
	if s == nil {
		return nil, Record{}, errNilState
	}
	if err := p.validate(false); err != nil {
		return nil, Record{}, err
	}
	fixed, costs, before := stateCosts(&p, s)
	if before <= p.Budget || len(s.Messages) == 0 {
		return unchanged(s, StrategySlidingWindow, before)
	}
	messages := s.Messages
	notice := conversation.Message{Role: conversation.RoleSystem, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: TruncationNotice}}}
	fixed += p.Counter.CountMessage(&notice)

	cut := chooseCut(cutPoints(messages), costs, fixed, p.Budget, recentStart(len(messages), p.KeepRecentMessages))
	if cut == 0 || onlyStandIns(messages[:cut]) {
		return unchanged(s, StrategySlidingWindow, before)
	}
	after := fixed + sum(costs[cut:])
	if after >= before {
		// The notice costs more than the few messages it would replace.
		return unchanged(s, StrategySlidingWindow, before)
	}
	head := standIn(messages[:cut], "truncated", conversation.FlagTruncationNotice, TruncationNotice, p.Now)
	out := withMessages(s, replaceFront(head, messages, cut))
	return out, Record{Strategy: StrategySlidingWindow, TokensBefore: before, TokensAfter: after, MessagesFolded: cut}, nil
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
