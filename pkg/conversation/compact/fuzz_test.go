package compact

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
)

// FuzzCompaction checks the properties every strategy promises, on conversations generated
// from the fuzz input: the system message is kept, no tool_use or tool_result is orphaned,
// tokens never increase, the newest messages are kept, the input is not modified, and each
// strategy is idempotent on its own output.
func FuzzCompaction(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 128, 0, 9, 1, 7, 2, 2, 5, 0, 3, 0, 1, 2, 1, 40})
	f.Add([]byte{0, 0, 10, 2, 3, 1, 200, 2, 2, 3, 1, 2, 0, 0, 60, 6, 5, 1, 50, 2, 1, 4, 3})
	f.Add([]byte{3, 5, 255, 4, 2, 2, 1, 9, 7, 3, 0, 2, 1, 1, 1})
	f.Add([]byte{1, 1, 1, 0, 255, 1, 255, 0, 255, 1, 255, 2, 0, 1, 255, 3, 2})
	f.Add([]byte(strings.Repeat("\x02\x03\x01\x80", 30)))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &generator{data: data}
		s, p := g.conversation()
		for _, strategy := range []Strategy{StrategySlidingWindow, StrategyClearToolResults, StrategySummarize} {
			checkStrategy(t, strategy, s, p)
		}
	})
}

func checkStrategy(t *testing.T, strategy Strategy, in *conversation.State, p Policy) {
	t.Helper()
	original := cloneState(in)
	out, rec, err := Compact(context.Background(), strategy, in, p)
	if err != nil {
		if strategy == StrategySummarize && errors.Is(err, ErrSummaryTooLong) && out == in {
			return
		}
		t.Fatalf("%s: %v", strategy, err)
	}
	if !reflect.DeepEqual(in, original) {
		t.Fatalf("%s modified its input", strategy)
	}
	if out.System != in.System {
		t.Fatalf("%s did not keep the system message", strategy)
	}
	before, after := p.Counter.CountState(in), p.Counter.CountState(out)
	if rec.Strategy != strategy || rec.TokensBefore != before || rec.TokensAfter != after {
		t.Fatalf("%s: record %+v, counted %d -> %d", strategy, rec, before, after)
	}
	if after > before {
		t.Fatalf("%s increased tokens from %d to %d", strategy, before, after)
	}
	if (rec.MessagesFolded == 0) != (out == in) {
		t.Fatalf("%s: folded %d but state changed: %v", strategy, rec.MessagesFolded, out != in)
	}
	checkNoNewOrphans(t, strategy, in.Messages, out.Messages)
	checkRecentKept(t, strategy, in.Messages, out.Messages, p.KeepRecentMessages)
	checkSeqAndIDs(t, strategy, out.Messages)
	if rec.MessagesFolded > 0 && strategy != StrategyClearToolResults {
		if len(out.Messages) < 2 || !isStandIn(&out.Messages[0]) || out.Messages[1].HasToolResult() {
			t.Fatalf("%s: window does not open with one stand-in then a non-result: %v", strategy, ids(out.Messages))
		}
	}

	again, rec2, err := Compact(context.Background(), strategy, out, p)
	if err != nil || again != out || rec2.MessagesFolded != 0 {
		t.Fatalf("%s is not idempotent: folded %d more, err %v", strategy, rec2.MessagesFolded, err)
	}
}

// orphans returns the tool_use ids without a later result and the tool_result ids without
// an earlier call.
func orphans(messages []conversation.Message) (calls, results map[string]bool) {
	calls, results = map[string]bool{}, map[string]bool{}
	called := map[string]bool{}
	for i := range messages {
		for _, id := range messages[i].ToolUseIDs() {
			called[id], calls[id] = true, true
		}
		for _, id := range messages[i].ToolResultIDs() {
			if called[id] {
				delete(calls, id)
			} else {
				results[id] = true
			}
		}
	}
	return calls, results
}

func checkNoNewOrphans(t *testing.T, strategy Strategy, in, out []conversation.Message) {
	t.Helper()
	inCalls, inResults := orphans(in)
	outCalls, outResults := orphans(out)
	for id := range outCalls {
		if !inCalls[id] {
			t.Fatalf("%s orphaned the call %s", strategy, id)
		}
	}
	for id := range outResults {
		if !inResults[id] {
			t.Fatalf("%s orphaned the result %s", strategy, id)
		}
	}
}

func checkRecentKept(t *testing.T, strategy Strategy, in, out []conversation.Message, keep int) {
	t.Helper()
	k := min(max(keep, 1), len(in))
	if len(out) < k || !reflect.DeepEqual(in[len(in)-k:], out[len(out)-k:]) {
		t.Fatalf("%s did not keep the last %d messages as they were", strategy, k)
	}
}

func checkSeqAndIDs(t *testing.T, strategy Strategy, messages []conversation.Message) {
	t.Helper()
	seen := map[string]bool{}
	for i := range messages {
		if seen[messages[i].ID] {
			t.Fatalf("%s: duplicate id %s", strategy, messages[i].ID)
		}
		seen[messages[i].ID] = true
		if i > 0 && messages[i].Seq <= messages[i-1].Seq {
			t.Fatalf("%s: seq not increasing at %d: %v", strategy, i, ids(messages))
		}
	}
}

// generator turns fuzz bytes into a conversation; it reads zeros once the bytes run out.
type generator struct {
	data     []byte
	pos      int
	messages []conversation.Message
	calls    int
}

func (g *generator) next() int {
	if g.pos >= len(g.data) {
		return 0
	}
	g.pos++
	return int(g.data[g.pos-1])
}

func (g *generator) text(n int) string {
	words := []string{"tool", "result", "the", "agent", "reads", "файл", "数据", "{\"k\":1}", "\n", "  "}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(words[(i*7+n)%len(words)])
		b.WriteByte(' ')
	}
	return b.String()
}

func (g *generator) add(role conversation.Role, blocks ...conversation.Block) *conversation.Message {
	seq := int64(len(g.messages)*2 + 1) // gaps, as after an earlier compaction
	g.messages = append(g.messages, conversation.Message{ID: fmt.Sprintf("m%d", seq), Seq: seq, Role: role, Blocks: blocks})
	return &g.messages[len(g.messages)-1]
}

func (g *generator) conversation() (*conversation.State, Policy) {
	header := g.next()
	keepRecent := g.next() % 6
	budgetShare := g.next()
	counter := byteCounter()
	if header&2 != 0 {
		counter, _ = tokens.New(tokens.Approximate)
	}
	for g.pos < len(g.data) && len(g.messages) < 300 {
		g.step()
	}
	s := conversation.NewState("fuzz")
	if header&1 != 0 {
		s.System = &conversation.Message{ID: "sys", Role: conversation.RoleSystem, Blocks: []conversation.Block{textBlock(g.text(40))}}
	}
	s.Messages = g.messages
	total := counter.CountState(&s)
	p := Policy{
		Budget:             max(1, total*budgetShare/255),
		KeepRecentMessages: keepRecent,
		Counter:            counter,
		Summarizer:         lengthySummarizer(header >> 2),
		SummaryMaxTokens:   g.next(),
	}
	return &s, p
}

func (g *generator) step() {
	switch op := g.next() % 9; op {
	case 0:
		g.add(conversation.RoleUser, textBlock(g.text(g.next()*3)))
	case 1:
		m := g.add(conversation.RoleAssistant, textBlock(g.text(g.next()*3)))
		if usage := g.next(); usage%3 == 0 {
			m.Usage.Output = int64(usage)
		}
	case 2:
		g.toolExchange()
	case 3: // a call never answered (pending, or lost)
		g.calls++
		g.add(conversation.RoleAssistant, conversation.Block{Type: conversation.BlockToolUse, ToolUseID: fmt.Sprintf("c%d", g.calls), ToolName: "run", Arguments: g.text(g.next())})
	case 4: // an earlier compaction's notice, only at the front
		if len(g.messages) == 0 {
			m := g.add(conversation.RoleSystem, textBlock(TruncationNotice))
			m.Flags = conversation.FlagTruncationNotice
		}
	case 5:
		g.add(conversation.RoleAssistant,
			conversation.Block{Type: conversation.BlockThinking, Text: g.text(g.next() * 2), Signature: "sig"},
			textBlock(g.text(g.next())))
	case 6:
		g.add(conversation.RoleUser, textBlock("see"), conversation.Block{Type: conversation.BlockImage, Media: &conversation.MediaRef{SourceType: "url", URL: "https://example.test/a.png"}})
	case 7: // a result whose call is nowhere: corrupt input must not break anything
		if g.next()%4 == 0 {
			g.add(conversation.RoleTool, conversation.Block{Type: conversation.BlockToolResult, ToolUseID: fmt.Sprintf("lost%d", g.pos), Text: "?"})
		}
	case 8:
		g.add(conversation.RoleSystem, textBlock("mid-conversation note"))
	}
}

// toolExchange adds an assistant message with 1-3 calls and their results, in one tool
// message or several, in any order, sometimes with a message between the calls and the
// results, and with text after the results sometimes.
func (g *generator) toolExchange() {
	n := 1 + g.next()%3
	callIDs := make([]string, n)
	blocks := make([]conversation.Block, 0, 1+n)
	blocks = append(blocks, textBlock("let me check"))
	for i := range callIDs {
		g.calls++
		callIDs[i] = fmt.Sprintf("c%d", g.calls)
		blocks = append(blocks, conversation.Block{Type: conversation.BlockToolUse, ToolUseID: callIDs[i], ToolName: "read", Input: []byte(`{"path":"x"}`)})
	}
	g.add(conversation.RoleAssistant, blocks...)
	mode := g.next()
	if mode&8 != 0 { // something interleaved before the results (a hook's note, a user's interjection)
		g.add(conversation.RoleUser, textBlock(g.text(g.next())))
	}
	if mode&1 != 0 { // reversed order
		for i, j := 0, len(callIDs)-1; i < j; i, j = i+1, j-1 {
			callIDs[i], callIDs[j] = callIDs[j], callIDs[i]
		}
	}
	result := func(id string) conversation.Block {
		size := g.next() * 5
		if size%2 == 0 {
			return conversation.Block{Type: conversation.BlockToolResult, ToolUseID: id, Text: g.text(size)}
		}
		return conversation.Block{Type: conversation.BlockToolResult, ToolUseID: id, IsError: true, Content: []conversation.Block{textBlock(g.text(size))}}
	}
	if mode&2 != 0 { // one tool message per result
		for _, id := range callIDs {
			g.add(conversation.RoleTool, result(id))
		}
		return
	}
	var results []conversation.Block
	for _, id := range callIDs {
		results = append(results, result(id))
	}
	if mode&4 != 0 {
		results = append(results, textBlock("and another thing"))
	}
	g.add(conversation.RoleTool, results...)
}

// lengthySummarizer answers with a summary whose length depends on the fuzz input, sometimes
// too long to save anything.
func lengthySummarizer(scale int) Summarizer {
	return SummarizerFunc(func(_ context.Context, req SummaryRequest) (Summary, error) {
		return Summary{Text: fmt.Sprintf("%d messages folded. %s", len(req.Messages), strings.Repeat("detail ", scale*scale))}, nil
	})
}
