package compact

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
)

// budgetFor is the token count of s.System, a truncation notice and the given messages.
func budgetFor(s *conversation.State, kept []conversation.Message) int {
	notice := conversation.Message{Role: conversation.RoleSystem, Blocks: []conversation.Block{textBlock(TruncationNotice)}}
	probe := withMessages(s, append([]conversation.Message{notice}, kept...))
	return byteCounter().CountState(probe)
}

func TestSlidingWindow(t *testing.T) {
	long := strings.Repeat("x", 200)
	cases := []struct {
		name       string
		build      func() *conv
		keepRecent int
		// budget keeps these messages (by index) after the notice; -1 means "far too small".
		budgetKeeps []int
		tinyBudget  bool
		wantKept    []string // ids after the notice; nil means unchanged
	}{
		{
			name:        "drops the oldest messages that do not fit",
			build:       func() *conv { return newConv().user(long).assistant(long).user(long).assistant("ok") },
			budgetKeeps: []int{2, 3},
			wantKept:    []string{"m3", "m4"},
		},
		{
			name: "never starts on a tool result: the call goes too",
			build: func() *conv {
				return newConv().user(long).call("t1").result(long, "t1").user("next").assistant("done")
			},
			budgetKeeps: []int{2, 3, 4}, // the budget would start on the result
			wantKept:    []string{"m4", "m5"},
		},
		{
			name: "parallel calls answered in two tool messages stay together",
			build: func() *conv {
				return newConv().user(long).call("a", "b").result(long, "a").result(long, "b").assistant("done")
			},
			budgetKeeps: []int{3, 4},
			wantKept:    []string{"m5"},
		},
		{
			name: "a message between a call and its result does not open a window",
			build: func() *conv {
				return newConv().user(long).call("t1").user("interjection").result(long, "t1").assistant("done")
			},
			budgetKeeps: []int{2, 3, 4}, // the budget would start on the interjection
			wantKept:    []string{"m5"},
		},
		{
			name: "keeps the last KeepRecentMessages even over budget",
			build: func() *conv {
				return newConv().user(long).assistant(long).user(long).assistant(long)
			},
			keepRecent: 2,
			tinyBudget: true,
			wantKept:   []string{"m3", "m4"},
		},
		{
			name: "the recent window reaching into a pair keeps the whole pair",
			build: func() *conv {
				return newConv().user(long).assistant(long).call("t1").result(long, "t1")
			},
			keepRecent: 1,
			tinyBudget: true,
			wantKept:   []string{"m3", "m4"},
		},
		{
			name: "a pending call at the end is kept",
			build: func() *conv {
				return newConv().user(long).assistant(long).user(long).call("pending")
			},
			tinyBudget: true,
			wantKept:   []string{"m4"},
		},
		{
			name:        "a state that fits is unchanged",
			build:       func() *conv { return newConv().user("hi").assistant("hello") },
			budgetKeeps: []int{0, 1, 0, 1, 0, 1}, // more than the state holds
			wantKept:    nil,
		},
		{
			name: "nothing to drop when every cut would split a pair",
			build: func() *conv {
				return newConv().call("t1").result(long, "t1")
			},
			tinyBudget: true,
			wantKept:   nil,
		},
		{
			name: "a notice costing more than what it replaces changes nothing",
			build: func() *conv {
				return newConv().user("a").assistant(long)
			},
			tinyBudget: true,
			wantKept:   nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.build().state()
			original := cloneState(s)
			budget := 1
			if !tc.tinyBudget {
				var kept []conversation.Message
				for _, i := range tc.budgetKeeps {
					kept = append(kept, s.Messages[i%len(s.Messages)])
				}
				budget = budgetFor(s, kept)
			}
			now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
			p := Policy{Budget: budget, KeepRecentMessages: tc.keepRecent, Counter: byteCounter(), Now: now}
			out, rec, err := SlidingWindow(s, p)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s, original) {
				t.Fatal("the input state was modified")
			}
			before := byteCounter().CountState(s)
			if rec.Strategy != StrategySlidingWindow || rec.TokensBefore != before || rec.TokensAfter != byteCounter().CountState(out) {
				t.Errorf("record %+v does not match the states (before %d, after %d)", rec, before, byteCounter().CountState(out))
			}
			if tc.wantKept == nil {
				if out != s || rec.MessagesFolded != 0 {
					t.Fatalf("want the state unchanged, got %v (folded %d)", ids(out.Messages), rec.MessagesFolded)
				}
				return
			}
			if out.System != s.System {
				t.Error("system message not kept")
			}
			notice := out.Messages[0]
			if !notice.Flags.Has(conversation.FlagTruncationNotice) || notice.Role != conversation.RoleSystem || notice.Text() != TruncationNotice {
				t.Errorf("first message is not a truncation notice: %+v", notice)
			}
			if got := ids(out.Messages[1:]); !slices.Equal(got, tc.wantKept) {
				t.Fatalf("kept %v, want %v", got, tc.wantKept)
			}
			folded := len(s.Messages) - len(tc.wantKept)
			lastFolded := s.Messages[folded-1]
			if rec.MessagesFolded != folded || notice.Seq != lastFolded.Seq || notice.ID != "parley-truncated-"+lastFolded.ID || !notice.CreatedAt.Equal(now) {
				t.Errorf("folded %d (want %d), notice seq %d id %q", rec.MessagesFolded, folded, notice.Seq, notice.ID)
			}
			if rec.TokensAfter >= rec.TokensBefore {
				t.Errorf("tokens went from %d to %d", rec.TokensBefore, rec.TokensAfter)
			}
		})
	}
}

func TestSlidingWindowTwiceReplacesTheNotice(t *testing.T) {
	long := strings.Repeat("y", 100)
	c := newConv()
	for range 6 {
		c.user(long).assistant(long)
	}
	s := c.state()
	p := Policy{Budget: budgetFor(s, s.Messages[8:]), Counter: byteCounter()}
	once, _, err := SlidingWindow(s, p)
	if err != nil {
		t.Fatal(err)
	}
	again, rec, err := SlidingWindow(once, p)
	if err != nil || again != once || rec.MessagesFolded != 0 {
		t.Fatalf("second pass changed the state (folded %d, err %v)", rec.MessagesFolded, err)
	}
	// New messages arrive; the next compaction folds the old notice with the oldest messages.
	grown := withMessages(once, append(slices.Clone(once.Messages), s.Messages[0], s.Messages[1]))
	grown.Messages[len(grown.Messages)-2].ID, grown.Messages[len(grown.Messages)-1].ID = "m13", "m14"
	grown.Messages[len(grown.Messages)-2].Seq, grown.Messages[len(grown.Messages)-1].Seq = 13, 14
	third, rec, err := SlidingWindow(grown, p)
	if err != nil || rec.MessagesFolded == 0 {
		t.Fatalf("grown state not compacted (err %v)", err)
	}
	notices := 0
	for i := range third.Messages {
		if isStandIn(&third.Messages[i]) {
			notices++
		}
	}
	if notices != 1 || !isStandIn(&third.Messages[0]) {
		t.Errorf("want exactly one notice, first; got %d in %v", notices, ids(third.Messages))
	}
}

func TestStrategiesRejectBadInput(t *testing.T) {
	s := newConv().user("hi").state()
	good := Policy{Budget: 10, Counter: byteCounter(), Summarizer: fixedSummary("s")}
	bad := map[string]Policy{
		"no counter":        {Budget: 10},
		"zero budget":       {Counter: byteCounter()},
		"negative recent":   {Budget: 10, Counter: byteCounter(), KeepRecentMessages: -1},
		"negative summary":  {Budget: 10, Counter: byteCounter(), SummaryMaxTokens: -1},
		"missing summarize": {Budget: 10, Counter: byteCounter()},
	}
	for name, p := range bad {
		for _, strategy := range []Strategy{StrategySlidingWindow, StrategyClearToolResults, StrategySummarize} {
			if name == "missing summarize" && strategy != StrategySummarize {
				continue
			}
			if _, _, err := Compact(t.Context(), strategy, s, p); !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("%s / %s: err %v, want ErrInvalidPolicy", name, strategy, err)
			}
		}
	}
	for _, strategy := range []Strategy{StrategySlidingWindow, StrategyClearToolResults, StrategySummarize} {
		if _, _, err := Compact(t.Context(), strategy, nil, good); err == nil {
			t.Errorf("%s accepted a nil state", strategy)
		}
	}
	if _, _, err := Compact(t.Context(), "Shrink", s, good); err == nil || !strings.Contains(err.Error(), "SlidingWindow") {
		t.Errorf("unknown strategy: err %v", err)
	}
	out, rec, err := Compact(t.Context(), StrategyNone, s, good)
	if err != nil || out != s || rec.TokensBefore != rec.TokensAfter || rec.TokensBefore == 0 {
		t.Errorf("None: %+v %v", rec, err)
	}
	if _, _, err := Compact(t.Context(), StrategyNone, s, Policy{}); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("None without counter: %v", err)
	}
}
