package compact

import (
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
)

func TestClearToolResults(t *testing.T) {
	long := strings.Repeat("o", 500)
	c := newConv().user("look").call("t1").result(long, "t1").call("t2", "t3")
	// t2 fails; the tool message also carries user text after the results (Anthropic allows it).
	c.add(conversation.RoleTool,
		conversation.Block{Type: conversation.BlockToolResult, ToolUseID: "t2", IsError: true, Text: long},
		conversation.Block{Type: conversation.BlockToolResult, ToolUseID: "t3", Content: []conversation.Block{textBlock(long)}},
		textBlock("also, hurry"))
	c.call("t4").result(long, "t4").assistant("done")
	s := c.state()
	original := cloneState(s)
	before := byteCounter().CountState(s)

	t.Run("oldest first until it fits", func(t *testing.T) {
		// Clearing t1 alone saves a little under 500 tokens.
		out, rec, err := ClearToolResults(s, Policy{Budget: before - 400, KeepRecentMessages: 2, Counter: byteCounter()})
		if err != nil {
			t.Fatal(err)
		}
		if rec.MessagesFolded != 1 || !out.Messages[2].Flags.Has(conversation.FlagToolResultsCleared) ||
			out.Messages[2].Blocks[0].Text != ClearedToolResult || out.Messages[4].Blocks[0].Text != long {
			t.Errorf("want only the first result cleared: %+v", rec)
		}
		if rec.TokensAfter > before-400 || rec.TokensAfter != byteCounter().CountState(out) {
			t.Errorf("record %+v", rec)
		}
	})

	t.Run("everything old, keeping ids, errors and other blocks", func(t *testing.T) {
		out, rec, err := ClearToolResults(s, Policy{Budget: 1, KeepRecentMessages: 2, Counter: byteCounter()})
		if err != nil {
			t.Fatal(err)
		}
		if rec.MessagesFolded != 2 {
			t.Errorf("edited %d messages, want 2", rec.MessagesFolded)
		}
		m := out.Messages[4]
		want := []conversation.Block{
			{Type: conversation.BlockToolResult, ToolUseID: "t2", IsError: true, Text: ClearedToolResult},
			{Type: conversation.BlockToolResult, ToolUseID: "t3", Text: ClearedToolResult},
			textBlock("also, hurry"),
		}
		if !equalBlocks(m.Blocks, want) {
			t.Errorf("cleared message: %+v", m.Blocks)
		}
		if got := out.Messages[6].Blocks[0].Text; got != long {
			t.Error("a recent result was cleared")
		}
		if !equalStates(s, original) {
			t.Error("input modified")
		}
		if got := ids(out.Messages); !slices.Equal(got, ids(s.Messages)) {
			t.Errorf("messages changed: %v", got)
		}
		again, rec2, err := ClearToolResults(out, Policy{Budget: 1, KeepRecentMessages: 2, Counter: byteCounter()})
		if err != nil || again != out || rec2.MessagesFolded != 0 {
			t.Errorf("not idempotent: %+v %v", rec2, err)
		}
	})

	t.Run("fits already", func(t *testing.T) {
		out, rec, err := ClearToolResults(s, Policy{Budget: before, Counter: byteCounter()})
		if err != nil || out != s || rec.MessagesFolded != 0 {
			t.Errorf("%+v %v", rec, err)
		}
	})

	t.Run("short results are left alone", func(t *testing.T) {
		short := newConv().call("t1").result("ok", "t1").user("next").state()
		out, rec, err := ClearToolResults(short, Policy{Budget: 1, Counter: byteCounter()})
		if err != nil || out != short || rec.MessagesFolded != 0 {
			t.Errorf("%+v %v", rec, err)
		}
	})
}
