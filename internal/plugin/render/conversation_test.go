package render

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/parley-dev/parley/pkg/conversation"
)

func text(s string) conversation.Block {
	return conversation.Block{Type: conversation.BlockText, Text: s}
}

// sampleState is a conversation with every shape Conversation folds: thinking, a tool call
// with a long argument, a subagent started by a Task call (with a nested subagent of its own),
// a result given as blocks, an error result, an image, usage, flags, and a thread no call names.
func sampleState() *conversation.State {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	s := &conversation.State{
		System: &conversation.Message{ID: "system", Role: conversation.RoleSystem, Blocks: []conversation.Block{text("You are terse.\nAnswer in English.")}},
		Messages: []conversation.Message{
			{ID: "u1", Role: conversation.RoleUser, Turn: 1, CreatedAt: at, Blocks: []conversation.Block{text("List /tmp and summarise the repo.")}},
			{
				ID: "a1", Role: conversation.RoleAssistant, Turn: 1, Model: "claude-sonnet-4", CreatedAt: at.Add(2 * time.Second),
				Usage: conversation.Usage{Input: 1204, Output: 56, CacheRead: 900},
				Blocks: []conversation.Block{
					{Type: conversation.BlockThinking, Text: "The user wants two things. First ls, then a subagent."},
					text("Let me look."),
					{Type: conversation.BlockToolUse, ToolUseID: "t1", ToolName: "Bash", Input: []byte(`{"command":"ls -la /tmp"}`)},
					{Type: conversation.BlockToolUse, ToolUseID: "t2", ToolName: "Task", Input: []byte(`{"description":"summarise","prompt":"Read README.md and summarise it in one line."}`)},
				},
			},
			{ID: "r1", Role: conversation.RoleTool, Turn: 1, Blocks: []conversation.Block{
				{Type: conversation.BlockToolResult, ToolUseID: "t1", Text: "a.txt\nb.txt\n"},
				{Type: conversation.BlockToolResult, ToolUseID: "t2", Content: []conversation.Block{text("Parley keeps conversations."), {Type: conversation.BlockImage}}},
			}},
			{ID: "a2", Role: conversation.RoleAssistant, Turn: 2, Blocks: []conversation.Block{
				{Type: conversation.BlockToolUse, ToolUseID: "t3", ToolName: "Read", Arguments: `{"path": "missing"}`},
			}},
			{ID: "r2", Role: conversation.RoleTool, Turn: 2, Blocks: []conversation.Block{
				{Type: conversation.BlockToolResult, ToolUseID: "t3", IsError: true, Text: "no such file"},
				{Type: conversation.BlockImage, Media: &conversation.MediaRef{MediaType: "image/png", URL: "https://example.com/a.png"}},
			}},
			{ID: "s1", Role: conversation.RoleSystem, Turn: 3, Flags: conversation.FlagCompactSummary, Blocks: []conversation.Block{text("Earlier: listed /tmp.")}},
			{ID: "a3", Role: conversation.RoleAssistant, Turn: 3, Name: "helper", Blocks: []conversation.Block{
				text("Two files; the repo keeps conversations."), {Type: conversation.BlockRedactedThinking, Data: "xx"}, {Type: "server_tool_use", Raw: []byte(`{}`)},
			}},
		},
		Subagents: []conversation.Subagent{
			{
				ToolUseID: "t2", AgentID: "ab12", Description: "summarise", Status: conversation.SubagentCompleted,
				Messages: []conversation.Message{
					{ID: "sa1", Role: conversation.RoleUser, Blocks: []conversation.Block{text("Read README.md and summarise it in one line.")}},
					{ID: "sa2", Role: conversation.RoleAssistant, Blocks: []conversation.Block{{Type: conversation.BlockToolUse, ToolUseID: "st1", ToolName: "Task", Input: []byte(`{"prompt":"deeper"}`)}}},
					{ID: "sa3", Role: conversation.RoleTool, Blocks: []conversation.Block{{Type: conversation.BlockToolResult, ToolUseID: "st1", Text: "done"}}},
					{ID: "sa4", Role: conversation.RoleAssistant, Blocks: []conversation.Block{text("Parley keeps conversations.")}},
				},
				Subagents: []conversation.Subagent{{ToolUseID: "st1", AgentID: "cd34", Messages: []conversation.Message{
					{ID: "sb1", Role: conversation.RoleAssistant, Blocks: []conversation.Block{text("deep answer")}},
				}}},
			},
			{AgentID: "orphan", Messages: []conversation.Message{{ID: "o1", Role: conversation.RoleAssistant, Blocks: []conversation.Block{text("lost thread")}}}},
		},
	}
	return s
}

func TestTranscriptFolded(t *testing.T) {
	var out bytes.Buffer
	h := ConversationHeader{Namespace: "demo", Name: "chat", SessionID: "0b7e1a3c-5f2d-4c8e-9a41-6d2f0e8b7c15", Epoch: 1, Tokens: 31234}
	if err := Conversation(&out, h, sampleState(), Options{Width: 60}); err != nil {
		t.Fatal(err)
	}
	want := `Conversation demo/chat · session 0b7e1a3c-5f2d-4c8e-9a41-6d2f0e8b7c15 · epoch 1 · 7 messages · 3 turns · 31,234 tokens

system
  You are terse.
  Answer in English.

── turn 1 ──────────────────────────────────
user · 2026-11-23 10:00:00
  List /tmp and summarise the repo.
assistant · claude-sonnet-4 · 2026-11-23 10:00:02 · tokens in 1,204 · out 56 · cache read 900
  … thinking The user wants two things. First ls, … (53 chars)
  Let me look.
  ▸ Bash {"command":"ls -la /tmp"}
  ▸ Task {"description":"summarise","prompt":"Read… (83 chars)
  │ subagent ab12 · summarise · completed · 4 messages
  │ user
  │   Read README.md and summarise it in one line.
  │ assistant
  │   ▸ Task {"prompt":"deeper"}
  │   │ subagent cd34 · 1 message
  │   │ assistant
  │   │   deep answer
  │ tool
  │   ◂ result done
  │ assistant
  │   Parley keeps conversations.
tool
  ◂ result a.txt ⏎ b.txt
  ◂ result Parley keeps conversations. ⏎ [image]

── turn 2 ──────────────────────────────────
assistant
  ▸ Read {"path": "missing"}
tool
  ◂ error no such file
  [image image/png https://example.com/a.png]

── turn 3 ──────────────────────────────────
system · compaction summary
  Earlier: listed /tmp.
assistant (helper)
  Two files; the repo keeps conversations.
  … thinking (redacted)
  [server_tool_use block]

subagent orphan · 1 message
assistant
  lost thread
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Fatalf("output (-want +got):\n%s", diff)
	}
	for l := range strings.SplitSeq(out.String(), "\n") {
		if strings.Contains(l, "…") && !strings.Contains(l, "redacted") && utf8.RuneCountInString(strings.TrimLeft(l, " │")) > 60 {
			t.Errorf("folded line longer than the width: %q", l)
		}
	}
}

func TestTranscriptFull(t *testing.T) {
	s := sampleState()
	s.Messages = s.Messages[1:3]
	s.Subagents, s.System = nil, nil
	var out bytes.Buffer
	if err := Conversation(&out, ConversationHeader{Namespace: "demo", Name: "chat"}, s, Options{Full: true, Location: time.FixedZone("CET", 3600)}); err != nil {
		t.Fatal(err)
	}
	want := `Conversation demo/chat · session - · epoch 0 · 2 messages · 1 turn · 0 tokens

── turn 1 ──────────────────────────────────
assistant · claude-sonnet-4 · 2026-11-23 11:00:02 · tokens in 1,204 · out 56 · cache read 900
  thinking:
    The user wants two things. First ls, then a subagent.
  Let me look.
  ▸ Bash [t1]
    {"command":"ls -la /tmp"}
  ▸ Task [t2]
    {"description":"summarise","prompt":"Read README.md and summarise it in one line."}
tool
  ◂ result [t1]
    a.txt
    b.txt
  ◂ result [t2]
    Parley keeps conversations.
    [image]
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Fatalf("output (-want +got):\n%s", diff)
	}
}

func TestMessageHeader(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		m    conversation.Message
		want string
	}{
		{conversation.Message{Role: conversation.RoleUser}, "user"},
		{conversation.Message{Role: conversation.RoleAssistant, Model: "gpt-5", Usage: conversation.Usage{Output: 3, CacheWrite: 1000}}, "assistant · gpt-5 · tokens out 3 · cache write 1,000"},
		{conversation.Message{Role: conversation.RoleUser, Name: "ana", CreatedAt: at, Flags: conversation.FlagMeta | conversation.FlagSynthetic}, "user (ana) · 2026-01-02 03:04:05 · meta · synthetic"},
		{conversation.Message{Role: conversation.RoleTool, Flags: conversation.FlagToolResultsCleared}, "tool · tool results cleared"},
		{conversation.Message{Role: conversation.RoleSystem, Flags: conversation.FlagTruncationNotice}, "system · truncation notice"},
	}
	for _, c := range cases {
		if got := MessageHeader(&c.m, nil); got != c.want {
			t.Errorf("MessageHeader = %q, want %q", got, c.want)
		}
	}
}
