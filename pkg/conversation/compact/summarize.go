package compact

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-dev/parley/pkg/conversation"
)

// ErrSummaryTooLong reports a summary that would not make the state smaller.
var ErrSummaryTooLong = errors.New("summary saves no tokens")

// Summarize folds the oldest exchange groups into one summary message written by
// Policy.Summarizer, keeping the system message and the newest messages that fit
// Policy.Budget minus room for the summary (Policy.SummaryMaxTokens). An earlier summary or
// notice at the front is folded in too, so the summarizer sees it and merges it. Cuts are made
// between exchange groups only, and the last KeepRecentMessages are always kept.
//
// A state that fits the budget, or has nothing to fold, is returned unchanged. When the
// summarizer fails, or writes a summary that saves nothing, the state is returned unchanged
// with the error: the caller may fall back to SlidingWindow.
func Summarize(ctx context.Context, s *conversation.State, p Policy) (*conversation.State, Record, error) {
	if s == nil {
		return nil, Record{}, errNilState
	}
	if err := p.validate(true); err != nil {
		return nil, Record{}, err
	}
	fixed, costs, before := stateCosts(&p, s)
	if before <= p.Budget || len(s.Messages) == 0 {
		return unchanged(s, StrategySummarize, before)
	}
	maxSummary := p.SummaryMaxTokens
	if maxSummary == 0 {
		maxSummary = DefaultSummaryMaxTokens
	}
	messages := s.Messages
	emptySummary := conversation.Message{Role: conversation.RoleSystem, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: SummaryPrefix}}}
	fixed += p.Counter.CountMessage(&emptySummary) + maxSummary

	cut := chooseCut(cutPoints(messages), costs, fixed, p.Budget, recentStart(len(messages), p.KeepRecentMessages))
	if cut == 0 || onlyStandIns(messages[:cut]) {
		return unchanged(s, StrategySummarize, before)
	}
	folded := messages[:cut]
	summary, err := p.Summarizer.Summarize(ctx, SummaryRequest{Messages: folded, MaxTokens: maxSummary})
	if err != nil {
		st, rec, _ := unchanged(s, StrategySummarize, before)
		return st, rec, fmt.Errorf("summarize %d messages: %w", len(folded), err)
	}
	head := standIn(folded, "summary", conversation.FlagCompactSummary, SummaryPrefix+summary.Text, p.Now)
	after := before - sum(costs[:cut]) + p.Counter.CountMessage(&head)
	if after >= before {
		st, rec, _ := unchanged(s, StrategySummarize, before)
		return st, rec, fmt.Errorf("%w: %d tokens of summary for %d tokens of history", ErrSummaryTooLong,
			p.Counter.CountMessage(&head), sum(costs[:cut]))
	}
	out := withMessages(s, replaceFront(head, messages, cut))
	return out, Record{
		Strategy: StrategySummarize, TokensBefore: before, TokensAfter: after, MessagesFolded: cut,
		SummaryUsage: summary.Usage,
	}, nil
}
