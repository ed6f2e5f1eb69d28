package tokens

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
)

// spyCounter counts one token per byte and records how often it was asked.
type spyCounter struct{ calls atomic.Int64 }

func (*spyCounter) Name() string { return "spy" }

func (s *spyCounter) CountText(text string) int {
	s.calls.Add(1)
	return len(text)
}

func text(s string) conversation.Block {
	return conversation.Block{Type: conversation.BlockText, Text: s}
}

func TestCountMessageBlocks(t *testing.T) {
	cases := []struct {
		name  string
		block conversation.Block
		want  int // content tokens, one per byte with spyCounter
	}{
		{"text", text("hello"), 5},
		{"thinking", conversation.Block{Type: conversation.BlockThinking, Text: "hmm", Signature: "sig-not-counted"}, 3},
		{"redacted thinking", conversation.Block{Type: conversation.BlockRedactedThinking, Data: "opaque"}, 6},
		{"tool use with exact arguments", conversation.Block{
			Type: conversation.BlockToolUse, ToolUseID: "call_1", ToolName: "read",
			Input: []byte(`{"path":"a"}`), Arguments: `{"path": "a"}`,
		}, ToolCallOverhead + 6 + 4 + 13},
		{"tool use with JSON input only", conversation.Block{
			Type: conversation.BlockToolUse, ToolUseID: "t1", ToolName: "ls", Input: []byte(`{}`),
		}, ToolCallOverhead + 2 + 2 + 2},
		{"tool result text", conversation.Block{Type: conversation.BlockToolResult, ToolUseID: "t1", Text: "output"}, ToolCallOverhead + 2 + 6},
		{"tool result blocks", conversation.Block{
			Type: conversation.BlockToolResult, ToolUseID: "t1",
			Content: []conversation.Block{text("ab"), {Type: conversation.BlockImage}},
		}, ToolCallOverhead + 2 + 2 + MediaTokens},
		{"image", conversation.Block{Type: conversation.BlockImage, Media: &conversation.MediaRef{SourceType: "base64", Data: "QUJD"}}, MediaTokens},
		{"document by reference", conversation.Block{Type: conversation.BlockDocument, Media: &conversation.MediaRef{SourceType: "url", URL: "https://x"}}, MediaTokens},
		{"document inline text", conversation.Block{Type: conversation.BlockDocument, Media: &conversation.MediaRef{SourceType: "text", Data: "plain"}}, 5},
		{"unknown block", conversation.Block{Type: "server_tool_use", Raw: []byte(`{"a":1}`)}, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewMessageCounter(&spyCounter{})
			m := conversation.Message{ID: "m", Role: conversation.RoleUser, Blocks: []conversation.Block{tc.block}}
			if got := c.CountMessage(&m); got != MessageOverhead+tc.want {
				t.Errorf("CountMessage = %d, want %d", got, MessageOverhead+tc.want)
			}
		})
	}
}

func TestCountMessageName(t *testing.T) {
	c := NewMessageCounter(&spyCounter{})
	m := conversation.Message{Role: conversation.RoleUser, Name: "alice", Blocks: []conversation.Block{text("hi")}}
	if got, want := c.CountMessage(&m), MessageOverhead+NameOverhead+5+2; got != want {
		t.Errorf("CountMessage = %d, want %d", got, want)
	}
	if got := c.CountMessage(nil); got != 0 {
		t.Errorf("CountMessage(nil) = %d", got)
	}
}

func TestCountMessageReportedUsage(t *testing.T) {
	content := text("0123456789") // 10 tokens with spyCounter
	cases := []struct {
		name   string
		role   conversation.Role
		output int64
		use    bool
		want   int
	}{
		{"assistant with usage: provider wins", conversation.RoleAssistant, 14, true, MessageOverhead + 14},
		{"provider counts fewer, plausibly", conversation.RoleAssistant, 5, true, MessageOverhead + 5},
		{"partial report is ignored", conversation.RoleAssistant, 4, true, MessageOverhead + 10},
		{"no usage", conversation.RoleAssistant, 0, true, MessageOverhead + 10},
		{"user messages never use usage", conversation.RoleUser, 14, true, MessageOverhead + 10},
		{"usage turned off", conversation.RoleAssistant, 14, false, MessageOverhead + 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewMessageCounter(&spyCounter{}, WithReportedUsage(tc.use))
			m := conversation.Message{
				ID: "a", Role: tc.role, Blocks: []conversation.Block{content},
				Usage: conversation.Usage{Input: 9000, CacheRead: 20000, Output: tc.output},
			}
			if got := c.CountMessage(&m); got != tc.want {
				t.Errorf("CountMessage = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCountState(t *testing.T) {
	c := NewMessageCounter(&spyCounter{})
	s := conversation.State{
		System:   &conversation.Message{Role: conversation.RoleSystem, Blocks: []conversation.Block{text("sys")}},
		Messages: []conversation.Message{{ID: "1", Role: conversation.RoleUser, Blocks: []conversation.Block{text("ab")}}},
		Subagents: []conversation.Subagent{{Messages: []conversation.Message{
			{ID: "s1", Role: conversation.RoleUser, Blocks: []conversation.Block{text("not in the parent's context")}},
		}}},
	}
	want := ReplyPriming + (MessageOverhead + 3) + (MessageOverhead + 2)
	if got := c.CountState(&s); got != want {
		t.Errorf("CountState = %d, want %d", got, want)
	}
	s.System = nil
	if got := c.CountState(&s); got != want-(MessageOverhead+3) {
		t.Errorf("CountState without system = %d", got)
	}
	if got := c.CountState(nil); got != 0 {
		t.Errorf("CountState(nil) = %d", got)
	}
}

func TestCountMessageCache(t *testing.T) {
	spy := &spyCounter{}
	c := NewMessageCounter(spy)
	m := conversation.Message{ID: "m1", Role: conversation.RoleUser, Blocks: []conversation.Block{text("hello")}}
	first := c.CountMessage(&m)
	calls := spy.calls.Load()
	if again := c.CountMessage(&m); again != first || spy.calls.Load() != calls {
		t.Fatalf("second count = %d after %d tokenizer calls, want %d from the cache", again, spy.calls.Load()-calls, first)
	}

	// A message streamed further under the same id is recounted.
	m.Blocks[0].Text = "hello world"
	if got := c.CountMessage(&m); got != MessageOverhead+11 {
		t.Errorf("after edit: %d, want %d", got, MessageOverhead+11)
	}
	// So is one whose bytes moved between fields.
	moved := conversation.Message{ID: "m1", Role: conversation.RoleUser, Blocks: []conversation.Block{
		{Type: conversation.BlockToolResult, ToolUseID: "hello", Text: " world"},
	}}
	if got := c.CountMessage(&moved); got != MessageOverhead+ToolCallOverhead+11 {
		t.Errorf("moved bytes: %d", got)
	}
}

func TestCountMessageWithoutCache(t *testing.T) {
	spy := &spyCounter{}
	c := NewMessageCounter(spy, WithCacheSize(0))
	m := conversation.Message{ID: "m1", Role: conversation.RoleUser, Blocks: []conversation.Block{text("hello")}}
	c.CountMessage(&m)
	calls := spy.calls.Load()
	c.CountMessage(&m)
	if spy.calls.Load() == calls {
		t.Fatal("counted from a cache that should be off")
	}
}

func TestCacheIsBounded(t *testing.T) {
	c := NewMessageCounter(&spyCounter{}, WithCacheSize(100))
	for i := range 1000 {
		m := conversation.Message{ID: fmt.Sprint(i), Role: conversation.RoleUser, Blocks: []conversation.Block{text("x")}}
		c.CountMessage(&m)
	}
	if n := c.cache.len(); n > 100 || n < 50 {
		t.Fatalf("cache holds %d entries, want between 50 and 100", n)
	}
}

func TestCacheKeepsEntriesInUse(t *testing.T) {
	cache := newCountCache(4) // two generations of two
	hot := cacheKey{id: "hot"}
	cache.put(hot, 7)
	for i := range 10 {
		cache.put(cacheKey{id: fmt.Sprint(i)}, i)
		if _, ok := cache.get(hot); !ok {
			t.Fatalf("hot entry evicted after %d other puts", i+1)
		}
	}
}

func TestCounterConcurrentUse(t *testing.T) {
	c, err := New(Cl100kBase, WithCacheSize(64))
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]conversation.Message, 200)
	for i := range msgs {
		msgs[i] = conversation.Message{ID: fmt.Sprint(i % 50), Role: conversation.RoleUser, Blocks: []conversation.Block{text(fmt.Sprintf("message number %d", i))}}
	}
	want := make([]int, len(msgs))
	for i := range msgs {
		want[i] = NewMessageCounter(c.(*MessageCounter).text, WithCacheSize(0)).CountMessage(&msgs[i])
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(msgs))
	for range 8 {
		wg.Go(func() {
			for i := range msgs {
				if got := c.CountMessage(&msgs[i]); got != want[i] {
					errs <- fmt.Sprintf("message %d: %d, want %d", i, got, want[i])
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestNewApproximateHasNoCacheByDefault(t *testing.T) {
	c, err := New(Approximate)
	if err != nil {
		t.Fatal(err)
	}
	if c.(*MessageCounter).cache != nil {
		t.Error("approximate counter has a cache by default")
	}
	c, err = New(Approximate, WithCacheSize(10))
	if err != nil {
		t.Fatal(err)
	}
	if c.(*MessageCounter).cache == nil {
		t.Error("WithCacheSize did not turn the cache on")
	}
}
