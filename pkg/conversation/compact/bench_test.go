package compact

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
	"github.com/parley-dev/parley/test/support/benchcpu"
)

// benchState builds an agent-style conversation of n messages: a user request every eight
// messages, assistant answers, and tool calls with results of a few hundred bytes to 2 KiB.
func benchState(n int) *conversation.State {
	words := strings.Fields("the agent reads the file and runs the tests then edits main.go to fix the failing case " +
		"func main() { fmt.Println(\"hello\") } {\"path\": \"/src/app/main.go\", \"line\": 42} error: exit status 1")
	text := func(i, size int) string {
		var b strings.Builder
		for j := 0; b.Len() < size; j++ {
			b.WriteString(words[(i*13+j*7)%len(words)])
			b.WriteByte(' ')
		}
		return b.String()
	}
	s := conversation.NewState("bench")
	s.System = &conversation.Message{ID: "sys", Role: conversation.RoleSystem, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: text(0, 2000)}}}
	s.Messages = make([]conversation.Message, 0, n)
	add := func(role conversation.Role, blocks ...conversation.Block) {
		seq := int64(len(s.Messages) + 1)
		s.Messages = append(s.Messages, conversation.Message{ID: fmt.Sprintf("msg-%d", seq), Seq: seq, Role: role, Blocks: blocks})
	}
	for i := 0; len(s.Messages) < n; i++ {
		switch {
		case i%5 == 0:
			add(conversation.RoleUser, conversation.Block{Type: conversation.BlockText, Text: text(i, 200)})
		case i%5 == 4 || len(s.Messages) == n-1:
			add(conversation.RoleAssistant, conversation.Block{Type: conversation.BlockText, Text: text(i, 400)})
		default:
			id := fmt.Sprintf("toolu_%d", i)
			add(conversation.RoleAssistant,
				conversation.Block{Type: conversation.BlockText, Text: text(i, 100)},
				conversation.Block{Type: conversation.BlockToolUse, ToolUseID: id, ToolName: "bash", Arguments: `{"command":"go test ./..."}`})
			add(conversation.RoleTool, conversation.Block{Type: conversation.BlockToolResult, ToolUseID: id, Text: text(i, 300+(i%8)*250)})
		}
	}
	return &s
}

// BenchmarkSlidingWindow compacts a 100,000-message state (about 10 M cl100k tokens) to an
// 80,000-token budget (a 200k window compacted at 80 %). "cl100k_base-warm" is the production
// case: the Session API counted every message on append, so counts come from the cache.
// "approximate" needs no cache. "cl100k_base-cold" recounts every message, the baseline
// that shows what the cache saves.
func BenchmarkSlidingWindow(b *testing.B) {
	s := benchState(100_000)
	for _, tc := range []struct {
		name      string
		tokenizer string
		warm      bool
	}{
		{"cl100k_base-warm", tokens.Cl100kBase, true},
		{"approximate", tokens.Approximate, false},
		{"cl100k_base-cold", tokens.Cl100kBase, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			newCounter := func() tokens.Counter {
				var opts []tokens.Option
				if tc.tokenizer != tokens.Approximate {
					opts = append(opts, tokens.WithCacheSize(4*len(s.Messages)))
				}
				c, err := tokens.New(tc.tokenizer, opts...)
				if err != nil {
					b.Fatal(err)
				}
				return c
			}
			counter := newCounter()
			if tc.warm {
				counter.CountState(s)
			}
			p := Policy{Budget: TargetBudget(200_000, 80), KeepRecentMessages: 10, Counter: counter}
			var rec Record
			cpu := benchcpu.Start()
			for b.Loop() {
				if !tc.warm && tc.tokenizer != tokens.Approximate {
					b.StopTimer()
					p.Counter = newCounter()
					b.StartTimer()
				}
				var err error
				if _, rec, err = SlidingWindow(s, p); err != nil {
					b.Fatal(err)
				}
			}
			if rec.MessagesFolded == 0 || rec.TokensAfter > p.Budget {
				b.Fatalf("not compacted: %+v", rec)
			}
			cpu.Report(b, 0, "")
			b.ReportMetric(float64(rec.TokensBefore), "tokens-before")
			b.ReportMetric(float64(rec.MessagesFolded), "folded")
		})
	}
}

// BenchmarkClearToolResults clears the old tool outputs of the same state with every count
// cached, the cleared versions included (one run before the timer starts): the steady state,
// so that each op measures the same work. The first compaction of a state also tokenizes the
// id of every cleared result once.
func BenchmarkClearToolResults(b *testing.B) {
	s := benchState(100_000)
	counter, err := tokens.New(tokens.Cl100kBase, tokens.WithCacheSize(4*len(s.Messages)))
	if err != nil {
		b.Fatal(err)
	}
	counter.CountState(s)
	p := Policy{Budget: TargetBudget(200_000, 80), KeepRecentMessages: 10, Counter: counter}
	if _, _, err := ClearToolResults(s, p); err != nil {
		b.Fatal(err)
	}
	cpu := benchcpu.Start()
	for b.Loop() {
		if _, _, err := ClearToolResults(s, p); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Report(b, 0, "")
}
