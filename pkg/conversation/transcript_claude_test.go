package conversation

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/parley-dev/parley/test/fixtures"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func importFixtureSession(t testing.TB) State {
	t.Helper()
	s, err := ImportClaudeSession(fixtures.Read(t, fixtures.ClaudeMain),
		ClaudeSubagentFile{AgentID: "a9b844f", Data: fixtures.Read(t, fixtures.ClaudeSubagent)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// messageDigest is what must survive every round trip: ids, roles, block types, text, tool ids.
type messageDigest struct {
	ID, Role string
	Blocks   []string
}

func digestMessages(msgs []Message) []messageDigest {
	out := make([]messageDigest, 0, len(msgs))
	for _, m := range msgs {
		d := messageDigest{ID: m.ID, Role: string(m.Role)}
		for _, b := range m.Blocks {
			d.Blocks = append(d.Blocks, digestBlock(b))
		}
		out = append(out, d)
	}
	return out
}

func digestBlock(b Block) string {
	s := string(b.Type) + "|" + b.ToolUseID + "|" + b.ToolName + "|" + b.Text
	for _, c := range b.Content {
		s += "{" + digestBlock(c) + "}"
	}
	return s
}

func equalJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	ja, _ := json.Marshal(va, json.Deterministic(true))
	jb, _ := json.Marshal(vb, json.Deterministic(true))
	return bytes.Equal(ja, jb)
}

func nonEmptyLines(data []byte) [][]byte {
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

func TestImportClaudeMainTranscript(t *testing.T) {
	s := importFixtureSession(t)
	if s.SessionID != "b1e7c2bd-68e9-4e0c-b2b1-e7ad59950ab0" {
		t.Errorf("session id %q", s.SessionID)
	}
	// 11 message lines; the three lines of msg_0181… and the two of msg_01G6… merge.
	if got := len(s.Messages); got != 8 {
		t.Fatalf("got %d messages, want 8", got)
	}
	first := s.Messages[1]
	if first.Role != RoleAssistant || len(first.Blocks) != 3 || first.ID != "msg_0181BxGX1zUFWYMQmKjWMTiT" || first.Blocks[0].ID != "c57785c6-46db-4382-a13f-dcb80c6697ae" {
		t.Errorf("merged assistant message: %+v", digestMessages([]Message{first}))
	}
	if first.Blocks[1].Type != BlockToolUse || string(first.Blocks[1].Input) != `{"skill":"test-skill"}` {
		t.Errorf("tool_use block: %+v", first.Blocks[1])
	}
	if s.Messages[2].Role != RoleTool || s.Messages[2].ToolResultIDs()[0] != "toolu_01XXU1hpPC3MRKyMum13WrVM" {
		t.Errorf("tool result message: %+v", s.Messages[2])
	}
	if !s.Messages[3].Flags.Has(FlagMeta) {
		t.Error("isMeta line lost its flag")
	}
	if s.Messages[2].ParentID != first.ID {
		t.Errorf("parent of the tool result is %q, want the merged message %q", s.Messages[2].ParentID, first.ID)
	}
	if len(s.Records) != 1 || !strings.Contains(string(s.Records[0].Raw), "queue-operation") {
		t.Errorf("records: %+v", s.Records)
	}
	if len(s.Subagents) != 1 {
		t.Fatalf("subagents: %d", len(s.Subagents))
	}
	sub := s.Subagents[0]
	if sub.ToolUseID != "toolu_01H79rxPSUkpfuuZFosbzSsv" || sub.Status != SubagentCompleted || len(sub.Messages) != 4 {
		t.Errorf("subagent: %s %s %d", sub.ToolUseID, sub.Status, len(sub.Messages))
	}
	if sub.Messages[0].Blocks[0].Text == "" || !sub.Messages[0].Flags.Has(FlagSidechain) {
		t.Errorf("subagent first message: %+v", sub.Messages[0])
	}
	for i := 1; i < len(s.Messages); i++ {
		if s.Messages[i].Seq <= s.Messages[i-1].Seq {
			t.Fatalf("seq not increasing at %d", i)
		}
	}
}

func TestExportClaudeReproducesFixtures(t *testing.T) {
	s := importFixtureSession(t)
	files, err := ExportClaude(&s, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("%d files", len(files))
	}
	wantMain := "projects/-Users-hunterhopkins-dev-projects-ai-systems-runtime-runner-test-test-workspace-workspace/b1e7c2bd-68e9-4e0c-b2b1-e7ad59950ab0.jsonl"
	if files[0].Path != wantMain {
		t.Errorf("path %s", files[0].Path)
	}
	if !strings.HasSuffix(files[1].Path, "/b1e7c2bd-68e9-4e0c-b2b1-e7ad59950ab0/subagents/agent-a9b844f.jsonl") {
		t.Errorf("subagent path %s", files[1].Path)
	}
	// The main transcript has a linear chain: every line comes back equal as JSON.
	orig := nonEmptyLines(fixtures.Read(t, fixtures.ClaudeMain))
	got := nonEmptyLines(files[0].Content)
	if len(orig) != len(got) {
		t.Fatalf("%d lines, want %d", len(got), len(orig))
	}
	for i := range orig {
		if !equalJSON(t, orig[i], got[i]) {
			t.Errorf("line %d differs:\n got %s\nwant %s", i+1, got[i], orig[i])
		}
	}
	// Re-importing the export gives the same messages.
	again, err := ImportClaudeSession(files[0].Content, ClaudeSubagentFile{AgentID: "a9b844f", Data: files[1].Content})
	if err != nil {
		t.Fatal(err)
	}
	assertSameMessages(t, digestMessages(s.Messages), digestMessages(again.Messages))
	assertSameMessages(t, digestMessages(s.Subagents[0].Messages), digestMessages(again.Subagents[0].Messages))
}

// The chain is kept as the transcript wrote it (the subagent fixture's fourth line names a
// parent the file does not hold: Claude Code wrote it so, and reads it so), and repaired
// where the export changed it: a line whose predecessor is gone follows the line written
// before it.
func TestExportClaudeChain(t *testing.T) {
	s := importFixtureSession(t)
	parents := func(content []byte) []string {
		lines := nonEmptyLines(content)
		out := make([]string, 0, len(lines))
		for _, l := range lines {
			var v struct {
				ParentUUID jsontext.Value `json:"parentUuid"`
			}
			if err := json.Unmarshal(l, &v); err != nil {
				t.Fatal(err)
			}
			out = append(out, string(v.ParentUUID))
		}
		return out
	}
	files, err := ExportClaude(&s, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"null", `"da32c939-f337-44ec-9d6d-241d3b6d8524"`, `"518a5e12-8d0c-4753-b85a-b33e1ba815dc"`, `"487d4a3d-30d0-4efb-b521-4988a326e8c8"`, `"f78b44bc-f42a-4f1f-ba26-b10e46dd56dd"`}
	if got := parents(files[1].Content); !cmp.Equal(got, want) {
		t.Errorf("parents %v, want %v", got, want)
	}
	// Drop the subagent's first answer (two lines): the tool result now follows the prompt.
	sub := &s.Subagents[0]
	sub.Messages = append(sub.Messages[:1:1], sub.Messages[2:]...)
	files, err = ExportClaude(&s, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"null", `"da32c939-f337-44ec-9d6d-241d3b6d8524"`, `"f78b44bc-f42a-4f1f-ba26-b10e46dd56dd"`}
	if got := parents(files[1].Content); !cmp.Equal(got, want) {
		t.Errorf("parents after an edit %v, want %v", got, want)
	}
}

func assertSameMessages(t *testing.T, want, got []messageDigest) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if want[i].ID != got[i].ID || want[i].Role != got[i].Role || strings.Join(want[i].Blocks, "\x00") != strings.Join(got[i].Blocks, "\x00") {
			t.Errorf("message %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}
