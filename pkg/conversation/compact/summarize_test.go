package compact

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
)

// fixedSummary always answers text.
func fixedSummary(text string) Summarizer {
	return SummarizerFunc(func(context.Context, SummaryRequest) (Summary, error) { return Summary{Text: text}, nil })
}

// recordingSummarizer remembers its requests and answers "summary of N messages", reporting
// 100 input tokens per message and 5 output tokens.
type recordingSummarizer struct{ requests []SummaryRequest }

func (r *recordingSummarizer) Summarize(ctx context.Context, req SummaryRequest) (Summary, error) {
	if err := ctx.Err(); err != nil {
		return Summary{}, err
	}
	r.requests = append(r.requests, req)
	return Summary{
		Text:  "summary of " + strings.Repeat("I", len(req.Messages)),
		Usage: conversation.Usage{Input: int64(100 * len(req.Messages)), Output: 5},
	}, nil
}

func TestSummarizeFoldsOldestGroups(t *testing.T) {
	long := strings.Repeat("z", 300)
	s := newConv().user(long).call("t1").result(long, "t1").assistant(long).user("and now?").assistant("this").state()
	rec := &recordingSummarizer{}
	// Room for the summary plus the last two messages.
	keep := withMessages(s, slices.Clone(s.Messages[4:]))
	budget := byteCounter().CountState(keep) + len(SummaryPrefix) + 50 + 3
	p := Policy{Budget: budget, Counter: byteCounter(), Summarizer: rec, SummaryMaxTokens: 50}
	original := cloneState(s)

	out, record, err := Summarize(t.Context(), s, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.requests) != 1 {
		t.Fatalf("summarizer called %d times", len(rec.requests))
	}
	req := rec.requests[0]
	if got := ids(req.Messages); !slices.Equal(got, []string{"m1", "m2", "m3", "m4"}) || req.MaxTokens != 50 {
		t.Errorf("summarizer got %v (max %d)", got, req.MaxTokens)
	}
	if got := ids(out.Messages); !slices.Equal(got, []string{"parley-summary-m4", "m5", "m6"}) {
		t.Fatalf("messages after: %v", got)
	}
	head := out.Messages[0]
	if head.Role != conversation.RoleSystem || !head.Flags.Has(conversation.FlagCompactSummary) ||
		head.Text() != SummaryPrefix+"summary of IIII" || head.Seq != 4 {
		t.Errorf("summary message: %+v", head)
	}
	if out.System != s.System || record.MessagesFolded != 4 || record.TokensAfter >= record.TokensBefore ||
		record.SummaryUsage != (conversation.Usage{Input: 400, Output: 5}) {
		t.Errorf("record %+v", record)
	}
	if !equalStates(s, original) {
		t.Error("input modified")
	}

	// Idempotent, and the next compaction merges the earlier summary.
	again, r2, err := Summarize(t.Context(), out, p)
	if err != nil || again != out || r2.MessagesFolded != 0 || len(rec.requests) != 1 {
		t.Fatalf("second pass: folded %d, calls %d, err %v", r2.MessagesFolded, len(rec.requests), err)
	}
	grown := withMessages(out, append(slices.Clone(out.Messages),
		conversation.Message{ID: "m7", Seq: 7, Role: conversation.RoleUser, Blocks: []conversation.Block{textBlock(long)}},
		conversation.Message{ID: "m8", Seq: 8, Role: conversation.RoleAssistant, Blocks: []conversation.Block{textBlock("fine")}}))
	third, _, err := Summarize(t.Context(), grown, p)
	if err != nil {
		t.Fatal(err)
	}
	if first := rec.requests[1].Messages[0]; !first.Flags.Has(conversation.FlagCompactSummary) {
		t.Errorf("earlier summary not passed to the summarizer first: %v", ids(rec.requests[1].Messages))
	}
	if !third.Messages[0].Flags.Has(conversation.FlagCompactSummary) || third.Messages[1].ID == "parley-summary-m4" {
		t.Errorf("after the third pass: %v", ids(third.Messages))
	}
}

func TestSummarizeFailures(t *testing.T) {
	long := strings.Repeat("z", 300)
	s := newConv().user(long).assistant(long).user("q").assistant("a").state()
	boom := errors.New("provider down")
	cases := map[string]struct {
		summarizer Summarizer
		want       error
	}{
		"summarizer error":   {SummarizerFunc(func(context.Context, SummaryRequest) (Summary, error) { return Summary{}, boom }), boom},
		"summary too long":   {fixedSummary(strings.Repeat("w", 2000)), ErrSummaryTooLong},
		"context is honored": {&recordingSummarizer{}, context.Canceled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			if name == "context is honored" {
				cancel()
			}
			defer cancel()
			out, rec, err := Summarize(ctx, s, Policy{Budget: 100, KeepRecentMessages: 2, Counter: byteCounter(), Summarizer: tc.summarizer})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if out != s || rec.MessagesFolded != 0 || rec.TokensAfter != rec.TokensBefore {
				t.Errorf("state changed on failure: %+v", rec)
			}
			if strings.Contains(err.Error(), long[:20]) {
				t.Error("error quotes the conversation")
			}
		})
	}
}

func TestSummarizeNothingToFold(t *testing.T) {
	rec := &recordingSummarizer{}
	s := newConv().user("hi").assistant("hello").state()
	for _, budget := range []int{1, 10_000} {
		out, r, err := Summarize(t.Context(), s, Policy{Budget: budget, KeepRecentMessages: 5, Counter: byteCounter(), Summarizer: rec})
		if err != nil || out != s || r.MessagesFolded != 0 {
			t.Errorf("budget %d: %+v %v", budget, r, err)
		}
	}
	if len(rec.requests) != 0 {
		t.Errorf("summarizer called %d times with nothing to fold", len(rec.requests))
	}
}
