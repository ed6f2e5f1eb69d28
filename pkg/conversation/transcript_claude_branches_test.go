package conversation

import (
	"bytes"
	"strings"
	"testing"
)

// testUUID turns a short name into a UUID, as real transcripts have.
func testUUID(name string) string {
	return "00000000-0000-4000-8000-" + strings.Repeat("0", 12-len(name)) + name
}

func claudeLineJSON(typ, name, parentName, content string) string {
	id := testUUID(name)
	p := `null`
	if parentName != "" {
		p = `"` + testUUID(parentName) + `"`
	}
	msg := `{"role":"user","content":` + content + `}`
	if typ == "assistant" {
		msg = `{"id":"msg_` + name + `","role":"assistant","content":` + content + `}`
	}
	return `{"type":"` + typ + `","uuid":"` + id + `","parentUuid":` + p + `,"sessionId":"s","message":` + msg + "}\n"
}

func TestImportClaudeDropsRewoundBranch(t *testing.T) {
	data := claudeLineJSON("user", "01", "", `"first"`) +
		claudeLineJSON("assistant", "a1", "01", `[{"type":"text","text":"ok"}]`) +
		claudeLineJSON("user", "02", "a1", `"old prompt"`) +
		claudeLineJSON("assistant", "a2", "02", `[{"type":"text","text":"old answer"}]`) +
		claudeLineJSON("user", "03", "a1", `"edited prompt"`) +
		claudeLineJSON("assistant", "a3", "03", `[{"type":"text","text":"new answer"}]`)
	s, err := ImportClaudeJSONL([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 0, len(s.Messages))
	for _, m := range s.Messages {
		texts = append(texts, m.Text())
	}
	if got := strings.Join(texts, "|"); got != "first|ok|edited prompt|new answer" {
		t.Errorf("conversation %q", got)
	}
	if len(s.Records) != 2 {
		t.Fatalf("%d records, want the 2 abandoned lines", len(s.Records))
	}
	files, err := ExportClaude(&s, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"old prompt", "old answer", "edited prompt", "new answer"} {
		if !bytes.Contains(files[0].Content, []byte(want)) {
			t.Errorf("%q missing from the export", want)
		}
	}
	again, err := ImportClaudeJSONL(files[0].Content)
	if err != nil {
		t.Fatal(err)
	}
	assertSameMessages(t, digestMessages(s.Messages), digestMessages(again.Messages))
}

func TestImportClaudeKeepsForksAtToolResults(t *testing.T) {
	// Both results point at the first call's line: not a rewind, nothing is dropped.
	data := claudeLineJSON("user", "01", "", `"go"`) +
		claudeLineJSON("assistant", "a1", "01", `[{"type":"tool_use","id":"t1","name":"x","input":{}}]`) +
		claudeLineJSON("user", "b1", "a1", `[{"type":"tool_result","tool_use_id":"t1","content":"one"}]`) +
		claudeLineJSON("user", "b2", "a1", `[{"type":"tool_result","tool_use_id":"t2","content":"two"}]`)
	s, err := ImportClaudeJSONL([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Messages) != 4 || len(s.Records) != 0 {
		t.Errorf("%d messages, %d records", len(s.Messages), len(s.Records))
	}
}

func TestImportClaudeDuplicateLine(t *testing.T) {
	line := claudeLineJSON("user", "01", "", `"hello"`)
	s, err := ImportClaudeJSONL([]byte(line + line))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Messages) != 1 || len(s.Records) != 1 {
		t.Errorf("%d messages, %d records", len(s.Messages), len(s.Records))
	}
}

func TestExportClaudeIgnoresBadLineRecords(t *testing.T) {
	s := NewState("11111111-2222-4333-8444-555555555555")
	s.Messages = []Message{{
		ID: "m", Role: RoleUser, Blocks: []Block{{Type: BlockText, Text: "hi"}},
		Source: Source{Kind: SourceClaudeCode, Raw: []byte(`[{"line":{},"blocks":-1},{"line":{},"blocks":2}]`)},
	}}
	files, err := ExportClaude(&s, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(files[0].Content, []byte(`"hi"`)) {
		t.Errorf("export %s", files[0].Content)
	}
}

// TestImportClaudeKeepsOffChainNonPrompts: off the chain, only a typed prompt of the same
// thread starts an abandoned branch; a meta line, a compaction summary and a sidechain
// whose first line points into the main thread are kept.
func TestImportClaudeKeepsOffChainNonPrompts(t *testing.T) {
	side := strings.Replace(claudeLineJSON("user", "05", "a1", `"side task"`), `"type":"user"`, `"type":"user","isSidechain":true`, 1)
	data := claudeLineJSON("user", "01", "", `"first"`) +
		claudeLineJSON("assistant", "a1", "01", `[{"type":"text","text":"ok"}]`) +
		strings.Replace(claudeLineJSON("user", "02", "a1", `"Caveat: local command"`), `"type":"user"`, `"type":"user","isMeta":true`, 1) +
		strings.Replace(claudeLineJSON("user", "03", "a1", `"summary"`), `"type":"user"`, `"type":"user","isCompactSummary":true`, 1) +
		side +
		claudeLineJSON("user", "04", "a1", `"next"`) +
		claudeLineJSON("assistant", "a4", "04", `[{"type":"text","text":"done"}]`)
	s, err := ImportClaudeJSONL([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Messages) != 6 || len(s.Records) != 0 || len(s.Subagents) != 1 || len(s.Subagents[0].Messages) != 1 {
		t.Errorf("%d messages, %d records, %d subagents: %v", len(s.Messages), len(s.Records), len(s.Subagents), digestMessages(s.Messages))
	}
}
