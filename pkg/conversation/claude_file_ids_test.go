package conversation

import (
	"errors"
	"testing"
)

// An id from a transcript or an agent's event names a file of the export: one that could place
// it outside the project directory is refused on import and on export.
func TestClaudeIDsThatCannotNameAFileAreRefused(t *testing.T) {
	for _, line := range []string{
		`{"type":"user","uuid":"u","isSidechain":true,"agentId":"../../etc","sessionId":"s","message":{"role":"user","content":"x"}}`,
		`{"type":"user","uuid":"u","sessionId":"../s","message":{"role":"user","content":"x"}}`,
		`{"type":"user","uuid":"u","sessionId":"..","message":{"role":"user","content":"x"}}`,
	} {
		if _, err := ImportClaudeJSONL([]byte(line)); !errors.Is(err, ErrTranscript) {
			t.Errorf("import of %s: %v, want ErrTranscript", line, err)
		}
	}
	e := Event{Type: EventSubagentSpawned, AgentID: "../x"}
	if err := e.Validate(); !errors.Is(err, ErrEvent) {
		t.Errorf("a subagent event with agent id ../x: %v, want ErrEvent", err)
	}
	s := NewState("s")
	s.Subagents = []Subagent{{AgentID: `a\b`, Status: SubagentRunning}}
	if _, err := ExportClaude(&s, ClaudeExportOptions{}); err == nil {
		t.Error("a subagent id with a path separator was exported")
	}
	s.Subagents = nil
	if _, err := ExportClaude(&s, ClaudeExportOptions{SessionID: "a/b"}); err == nil {
		t.Error("a session id with a path separator was exported")
	}
	if _, err := ExportClaude(&s, ClaudeExportOptions{}); err != nil {
		t.Errorf("a plain session id: %v", err)
	}
}
