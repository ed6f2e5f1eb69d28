package compact

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
)

// Strategy names a compaction strategy, as in a Conversation's spec.context.strategy.
type Strategy string

// The strategies.
const (
	StrategySlidingWindow    Strategy = "SlidingWindow"
	StrategyClearToolResults Strategy = "ClearToolResults"
	StrategySummarize        Strategy = "Summarize"
	StrategyNone             Strategy = "None"
)

// DefaultCompactAtPercent is the threshold Due and TargetBudget use for a percent outside
// 1..100.
const DefaultCompactAtPercent = 80

// DefaultSummaryMaxTokens bounds a summary when Policy.SummaryMaxTokens is zero.
const DefaultSummaryMaxTokens = 2048

// Policy says how far and how to compact.
type Policy struct {
	// Budget is the token count the compacted state should fit in (see TargetBudget).
	Budget int
	// KeepRecentMessages is how many of the newest messages are never folded or edited. The
	// newest message is kept even when it is zero.
	KeepRecentMessages int
	// Counter counts tokens; its per-message cache makes repeated compaction cheap.
	Counter tokens.Counter
	// Summarizer writes the summary of Summarize; other strategies ignore it.
	Summarizer Summarizer
	// SummaryMaxTokens is the longest summary asked for (default DefaultSummaryMaxTokens); the
	// budget reserves room for it.
	SummaryMaxTokens int
	// Now stamps CreatedAt of the messages compaction inserts; zero leaves it unset.
	Now time.Time
}

// Record describes one compaction, for status.lastCompaction and the compaction event.
type Record struct {
	Strategy     Strategy
	TokensBefore int
	TokensAfter  int
	// MessagesFolded counts the messages of State.Messages that were removed (SlidingWindow,
	// Summarize) or edited (ClearToolResults). Zero means the state was returned unchanged.
	MessagesFolded int
	// SummaryUsage is what the summarizer's provider reported the summary cost (Summarize
	// only; zero when it reported nothing). TokensAfter counts the summary with Policy.Counter,
	// the conversation's own tokenizer, which may not be the summarizer model's.
	SummaryUsage conversation.Usage
}

// ErrInvalidPolicy reports a Policy the strategies cannot work with.
var ErrInvalidPolicy = errors.New("invalid compaction policy")

func (p *Policy) validate(needSummarizer bool) error {
	switch {
	case p.Counter == nil:
		return fmt.Errorf("%w: no token counter", ErrInvalidPolicy)
	case p.Budget <= 0:
		return fmt.Errorf("%w: budget %d, want > 0", ErrInvalidPolicy, p.Budget)
	case p.KeepRecentMessages < 0:
		return fmt.Errorf("%w: keepRecentMessages %d, want >= 0", ErrInvalidPolicy, p.KeepRecentMessages)
	case p.SummaryMaxTokens < 0:
		return fmt.Errorf("%w: summaryMaxTokens %d, want >= 0", ErrInvalidPolicy, p.SummaryMaxTokens)
	case needSummarizer && p.Summarizer == nil:
		return fmt.Errorf("%w: strategy Summarize needs a summarizer", ErrInvalidPolicy)
	}
	return nil
}

// Due reports whether a conversation of the given tokens has reached compactAtPercent of
// maxTokens. It is false when maxTokens is not positive (no known window). A percent outside
// 1..100 means DefaultCompactAtPercent.
func Due(tokens, maxTokens, compactAtPercent int) bool {
	if maxTokens <= 0 {
		return false
	}
	return int64(tokens)*100 >= int64(maxTokens)*int64(normalPercent(compactAtPercent))
}

// TargetBudget is the Policy.Budget for a window of maxTokens compacted at compactAtPercent:
// half of the threshold. Compacting to just under the threshold would trigger again a few
// messages later; halving leaves room for as much new conversation as compaction kept.
func TargetBudget(maxTokens, compactAtPercent int) int {
	if maxTokens <= 0 {
		return 0
	}
	return int(int64(maxTokens) * int64(normalPercent(compactAtPercent)) / 200)
}

func normalPercent(p int) int {
	if p < 1 || p > 100 {
		return DefaultCompactAtPercent
	}
	return p
}

// Compact runs the named strategy. StrategyNone returns the state unchanged.
func Compact(ctx context.Context, strategy Strategy, s *conversation.State, p Policy) (*conversation.State, Record, error) {
	switch strategy {
	case StrategySlidingWindow:
		return SlidingWindow(s, p)
	case StrategyClearToolResults:
		return ClearToolResults(s, p)
	case StrategySummarize:
		return Summarize(ctx, s, p)
	case StrategyNone:
		if p.Counter == nil {
			return nil, Record{}, fmt.Errorf("%w: no token counter", ErrInvalidPolicy)
		}
		n := p.Counter.CountState(s)
		return s, Record{Strategy: StrategyNone, TokensBefore: n, TokensAfter: n}, nil
	default:
		return nil, Record{}, fmt.Errorf("unknown compaction strategy %q: want one of %s, %s, %s, %s",
			strategy, StrategySlidingWindow, StrategyClearToolResults, StrategySummarize, StrategyNone)
	}
}

// unchanged is the result of a strategy that had nothing to do.
func unchanged(s *conversation.State, strategy Strategy, tokens int) (*conversation.State, Record, error) {
	return s, Record{Strategy: strategy, TokensBefore: tokens, TokensAfter: tokens}, nil
}
