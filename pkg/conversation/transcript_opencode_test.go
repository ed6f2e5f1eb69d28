package conversation

import (
	"errors"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/parley-dev/parley/test/fixtures"
)

func TestImportOpenCode(t *testing.T) {
	s, err := ImportOpenCode(fixtures.Read(t, fixtures.OpenCode))
	if err != nil {
		t.Fatal(err)
	}
	if s.SessionID != "ses_019b38d16719_9fwj8902kdq" || s.CWD == "" {
		t.Errorf("session %q cwd %q", s.SessionID, s.CWD)
	}
	// 1 user + 6 assistant messages, 5 of which called a tool (one RoleTool message each).
	if len(s.Messages) != 12 {
		t.Fatalf("%d messages", len(s.Messages))
	}
	calls, results, errorsSeen := 0, 0, 0
	for i, m := range s.Messages {
		calls += len(m.ToolUseIDs())
		results += len(m.ToolResultIDs())
		for _, b := range m.Blocks {
			if b.IsError {
				errorsSeen++
			}
		}
		if m.Role == RoleTool {
			prev := s.Messages[i-1]
			if prev.Role != RoleAssistant || prev.ToolUseIDs()[0] != m.ToolResultIDs()[0] {
				t.Errorf("tool message %s does not follow its call", m.ID)
			}
		}
	}
	if calls != 5 || results != 5 || errorsSeen != 1 {
		t.Errorf("calls %d results %d errors %d", calls, results, errorsSeen)
	}
	if len(s.Subagents) != 2 || s.Subagents[1].AgentID != "ses_4c72e3604ffefkLKmFGZXMq2KD" || s.Subagents[1].Description != "Write subagent test file" {
		t.Errorf("subagents %+v", s.Subagents)
	}
	if u := s.Messages[1].Usage; u.Input != 14427 || u.Output != 180 || u.CacheRead != 73 {
		t.Errorf("usage %+v", u)
	}
	if len(s.Messages[1].Source.Raw) == 0 {
		t.Error("step parts not kept")
	}
	// It exports to a Claude transcript with the same messages.
	files, err := ExportClaude(&s, ClaudeExportOptions{SessionID: "0b9d6f7e-1111-4222-8333-944445555666"})
	if err != nil {
		t.Fatal(err)
	}
	back, err := ImportClaudeJSONL(files[0].Content)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Messages) != len(s.Messages) {
		t.Fatalf("%d messages after export, want %d", len(back.Messages), len(s.Messages))
	}
	for i := range s.Messages {
		// Unsigned thinking (OpenCode's reasoning parts) cannot be sent to Anthropic: left out.
		sent := s.Messages[i]
		sent.Blocks = sendable(sent.Blocks)
		want, got := digestMessages([]Message{sent})[0], digestMessages(back.Messages[i : i+1])[0]
		if want.Role != got.Role || len(want.Blocks) != len(got.Blocks) {
			t.Errorf("message %d: %+v, want %+v", i, got, want)
			continue
		}
		for k := range want.Blocks {
			if want.Blocks[k] != got.Blocks[k] {
				t.Errorf("message %d block %d: %q, want %q", i, k, got.Blocks[k], want.Blocks[k])
			}
		}
	}
}

func TestImportOpenCodeErrors(t *testing.T) {
	for _, in := range []string{
		`nope`,
		`{"info":{"id":"s"},"messages":[{"info":{"id":"m","role":"robot"},"parts":[]}]}`,
		`{"info":{"id":"s"},"messages":[{"info":{"role":"user"},"parts":[]}]}`,
		`{"info":{"id":"s"},"messages":[{"info":{"id":"m","role":"user"},"parts":[7]}]}`,
		`{"info":{"id":"s"},"messages":[{"info":{"id":"m","role":"user"},"parts":[]},{"info":{"id":"m","role":"user"},"parts":[]}]}`,
		`{"info":{"id":"s"},"messages":[{"info":{"id":"m","role":"assistant"},"parts":[{"id":"p","type":"tool","callID":"c","state":{}},{"id":"p","type":"tool","callID":"c","state":{}}]}]}`,
		`{"info":{"id":"s"},"messages":[{"info":{"id":"m","role":"user"},"parts":[{"id":"p","type":"text","text":"a","text":"b"}]}]}`,
		`{"info":{"id":"s"},"messages":[]} {}`,
	} {
		if _, err := ImportOpenCode([]byte(in)); !errors.Is(err, ErrTranscript) {
			t.Errorf("%s: err = %v", in, err)
		}
	}
}

func FuzzImportOpenCode(f *testing.F) {
	// The first two messages of the fixture (a prompt, then text, reasoning and a task call),
	// shortened: small seeds keep the fuzzer's minimisation quick (see compactSeed).
	var export struct {
		Info     jsontext.Value   `json:"info"`
		Messages []jsontext.Value `json:"messages"`
	}
	if err := json.Unmarshal(fixtures.Read(f, fixtures.OpenCode), &export); err != nil {
		f.Fatal(err)
	}
	export.Messages = export.Messages[:2]
	head, err := json.Marshal(export)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(compactSeed(f, head, 1))
	f.Add([]byte(`{"info":{"id":"s"},"messages":[{"info":{"id":"m","role":"assistant"},"parts":[{"type":"tool","callID":"c","tool":"task","state":{"status":"running","input":{}}}]}]}`))
	f.Add([]byte(`{"info":{"id":"s"},"messages":[{"info":{"id":"m","role":"user"},"parts":[]},{"info":{"id":"m","role":"user"},"parts":[]}]}`))
	f.Add([]byte(`{"info":{"id":"s","title":"t"},"extra":1,"messages":[{"info":{"id":"m","role":"assistant","tokens":{"input":1,"output":2,"reasoning":3}},"parts":[` +
		`{"id":"p","type":"tool","callID":"c","tool":"bash","state":{"status":"error","input":null,"output":"o","error":"e","time":{"start":1}}},` +
		`{"id":"p2","type":"tool","callID":"c","tool":"bash","state":{"status":"completed","output":"o2"}},{"type":"text","text":null,"time":{}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ImportOpenCode(data)
		if err != nil {
			if !errors.Is(err, ErrTranscript) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("imported state breaks an invariant: %v", err)
		}
		// Every exported message is one message, its tool results one more after it.
		var exp struct {
			Messages []jsontext.Value `json:"messages"`
		}
		if err := json.Unmarshal(data, &exp, lenientJSON); err != nil {
			t.Fatal(err)
		}
		own := 0
		for _, m := range s.Messages {
			if m.Role != RoleTool {
				own++
			}
		}
		if own != len(exp.Messages) {
			t.Fatalf("%d messages exported, %d imported", len(exp.Messages), own)
		}
		if _, err := ToAnthropic(&s); err != nil {
			t.Fatalf("imported state does not render: %v", err)
		}
		// Whatever an importer accepts can be checkpointed and comes back the same.
		snap, err := MarshalSnapshot(&s, SnapshotMetadata{CreatedAt: snapshotTime})
		if err != nil {
			t.Fatalf("imported state does not snapshot: %v", err)
		}
		back, err := UnmarshalSnapshot(snap)
		if err != nil {
			t.Fatalf("snapshot of the imported state does not decode: %v", err)
		}
		if diff := cmp.Diff(s, back.State); diff != "" {
			t.Fatalf("imported state changed in a snapshot (-imported +decoded):\n%s", diff)
		}
		// Lossless: the export is the input, as JSON, and imports to the same state.
		out, err := ExportOpenCode(&back.State, OpenCodeExportOptions{})
		if err != nil {
			t.Fatalf("imported state does not export: %v", err)
		}
		if !sameJSON(data, out) {
			t.Fatalf("export differs from the input (-input +export):\n%s", jsonDiff(data, out))
		}
		again, err := ImportOpenCode(out)
		if err != nil {
			t.Fatalf("export does not import: %v", err)
		}
		if diff := cmp.Diff(s, again, sameState); diff != "" {
			t.Fatalf("import → export → import changed the state (-first +second):\n%s", diff)
		}
	})
}
