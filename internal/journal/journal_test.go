package journal

import (
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/memory"
	"github.com/parley-dev/parley/test/fixtures"
)

// Fixtures and helpers of this package's tests: histories in memory, states from the Claude
// Code fixture of test/fixtures (with its subagent) or made by hand.

// fixtureState is the Claude Code session of test/fixtures: eight messages, one subagent, one raw
// record, a working directory.
func fixtureState(t testing.TB) conversation.State {
	t.Helper()
	s, err := conversation.ImportClaudeSession(fixtures.Read(t, fixtures.ClaudeMain),
		conversation.ClaudeSubagentFile{AgentID: "a9b844f", Data: fixtures.Read(t, fixtures.ClaudeSubagent)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func text(s string) conversation.Block {
	return conversation.Block{Type: conversation.BlockText, Text: s}
}

func toolUse(id, name string) conversation.Block {
	return conversation.Block{Type: conversation.BlockToolUse, ToolUseID: id, ToolName: name, Input: jsontext.Value(`{"q":"` + id + `"}`)}
}

func toolResult(id, out string) conversation.Block {
	return conversation.Block{Type: conversation.BlockToolResult, ToolUseID: id, Text: out}
}

func msg(id string, role conversation.Role, blocks ...conversation.Block) conversation.Message {
	return conversation.Message{ID: id, Role: role, Blocks: blocks}
}

// numbered numbers messages as a history does: Seq from 1, turns as NumberTurns says.
func numbered(msgs ...conversation.Message) []conversation.Message {
	for i := range msgs {
		msgs[i].Seq = int64(i + 1)
	}
	conversation.NumberTurns(msgs)
	return msgs
}

// handState has every part a state can have: session fields, a system prompt, tool calls and
// results, usage, subagents (nested, and one without a tool call), raw records before the
// first message, after messages and in a subagent's thread, and two adapters' states.
func handState() conversation.State {
	s := conversation.NewState("hand-made")
	s.CWD = "/workspace"
	s.Extra = jsontext.Value(`{"futureField":{"x":1}}`)
	// An OpenCode export's session info, kept for its exporter.
	s.Source = conversation.Source{Kind: conversation.SourceOpenCode, IDs: []string{"ses_1"}, Raw: jsontext.Value(`{"info":{"id":"ses_1","title":"hand-made"},"version":"1.0"}`)}
	s.System = &conversation.Message{ID: "sys-1", Role: conversation.RoleSystem, Blocks: []conversation.Block{text("Be brief.")}}
	s.Messages = numbered(
		msg("u1", conversation.RoleUser, text("list the files"), conversation.Block{
			Type: conversation.BlockImage, Media: &conversation.MediaRef{SourceType: "url", URL: "https://example.com/a.png"},
		}),
		msg("a1", conversation.RoleAssistant, conversation.Block{Type: conversation.BlockThinking, Text: "ls", Signature: "sig"},
			toolUse("t1", "Bash"), toolUse("t2", "Task")),
		msg("r1", conversation.RoleTool, toolResult("t1", "a.go\nb.go"), toolResult("t2", "the subagent is done")),
		conversation.Message{
			ID: "a2", Role: conversation.RoleAssistant, Blocks: []conversation.Block{text("Two files.")},
			Model: "claude", Usage: conversation.Usage{Input: 100, Output: 4}, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		},
		msg("u2", conversation.RoleUser, text("thanks")),
		msg("a3", conversation.RoleAssistant, text("You're welcome."), conversation.Block{Type: "server_tool_use", Raw: jsontext.Value(`{"type":"server_tool_use","id":"x"}`)}),
	)
	s.Subagents = []conversation.Subagent{
		{
			ToolUseID: "t2", AgentID: "agent-1", Status: conversation.SubagentCompleted, Description: "look around",
			Messages: numbered(msg("s1", conversation.RoleUser, text("look")), msg("s2", conversation.RoleAssistant, text("looked"))),
			Subagents: []conversation.Subagent{{
				AgentID: "agent-2", Status: conversation.SubagentRunning,
				Messages: numbered(msg("n1", conversation.RoleUser, text("deeper"))),
			}},
		},
		{AgentID: "agent-orphan", Status: conversation.SubagentRunning, Messages: numbered(msg("o1", conversation.RoleUser, text("alone")))},
	}
	raw := func(after, thread, typ string) conversation.RawRecord {
		return conversation.RawRecord{AfterID: after, Thread: thread, Raw: jsontext.Value(`{"type":"` + typ + `"}`)}
	}
	// In the order StateRecords writes them: before the first message, after each message in
	// turn, then the subagents' threads.
	s.Records = []conversation.RawRecord{
		raw("", "", "queue-operation"), raw("a1", "", "file-history-snapshot"), raw("a1", "", "progress"),
		raw("a3", "", "summary"), raw("s1", "agent-1", "progress"),
	}
	s.Adapters = conversation.AdapterStates{
		&conversation.ClaudeAgentSDKState{SessionID: "sdk-1", WorkspacePath: "/workspace", MessageCount: 6},
		&conversation.GenericAdapterState{AdapterType: "opencode", SessionID: "oc-1", CanResume: true, Data: jsontext.Value(`{"k":"v"}`)},
	}
	return s
}

func newHistory(t testing.TB) history.History {
	t.Helper()
	h, err := memory.New(memory.Options{}).Open(t.Context(), "conversation", history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func appendAll(t testing.TB, h history.History, records ...history.Record) []uint64 {
	t.Helper()
	got, err := AppendAll(t.Context(), h, records)
	if err != nil {
		t.Fatal(err)
	}
	return got.Sequences
}

func readAll(t testing.TB, h history.History) []history.Entry {
	t.Helper()
	var out []history.Entry
	for e, err := range history.All(t.Context(), h, 0, 1) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func stateRecords(t testing.TB, s *conversation.State, prefix string) []history.Record {
	t.Helper()
	records, err := StateRecords(s, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return records
}

// historyEntry is the i-th record as a store returns it.
func historyEntry(i int, r history.Record) history.Entry {
	return history.Entry{Seq: uint64(i + 1), ID: r.ID, Data: r.Data}
}

// fold applies entries to a new view, in order.
func fold(t testing.TB, counter tokens.Counter, entries []history.Entry) *View {
	t.Helper()
	v := NewView("session", counter)
	for _, e := range entries {
		if err := v.Apply(e); err != nil {
			t.Fatalf("apply %d (%s): %v", e.Seq, e.ID, err)
		}
	}
	return v
}

func newCounter(t testing.TB, name string) tokens.Counter {
	t.Helper()
	c, err := tokens.New(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// parts is a state as JSON, part by part, for comparisons that name what differs. Message
// sequence numbers and the session id are left out: a history assigns its own.
func parts(t testing.TB, s *conversation.State) map[string]string {
	t.Helper()
	msgs := append([]conversation.Message(nil), s.Messages...)
	for i := range msgs {
		msgs[i].Seq = 0
	}
	out := map[string]string{}
	for name, v := range map[string]any{
		"messages": msgs, "system": s.System, "subagents": s.Subagents, "records": s.Records,
		"adapters": s.Adapters, "cwd": s.CWD, "extra": s.Extra, "schemaVersion": s.SchemaVersion,
		"source": s.Source,
	} {
		data, err := json.Marshal(v, json.Deterministic(true))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = string(data)
	}
	return out
}

func sameParts(t testing.TB, got, want *conversation.State) {
	t.Helper()
	g, w := parts(t, got), parts(t, want)
	for name := range w {
		if g[name] != w[name] {
			t.Errorf("%s differ:\n got %s\nwant %s", name, g[name], w[name])
		}
	}
}
