package plugin

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
)

// disguising is message text that would drive or disguise a terminal the export is printed
// to: ESC (an escape sequence clearing the screen), the 8-bit CSI U+009B, the bidi override
// U+202E and the line separator U+2028.
const disguising = "ok\x1b[2J\u009b1A\u202eevil\u2028end"

// withDisguisingText is the Claude fixture with its first user and assistant texts replaced.
func withDisguisingText(t *testing.T) *conversation.State {
	t.Helper()
	tr, err := readImportFile(claudeFixture, importClaude, "")
	must(t, err)
	s := &tr.state
	for _, role := range []conversation.Role{conversation.RoleUser, conversation.RoleAssistant} {
		if !setFirstText(s, role, disguising) {
			t.Fatalf("the fixture has no %s text", role)
		}
	}
	return s
}

func setFirstText(s *conversation.State, role conversation.Role, text string) bool {
	for i := range s.Messages {
		if s.Messages[i].Role != role {
			continue
		}
		for j := range s.Messages[i].Blocks {
			if s.Messages[i].Blocks[j].Type == conversation.BlockText {
				s.Messages[i].Blocks[j].Text = text
				return true
			}
		}
	}
	return false
}

// readBack is the main thread of an export, read by the importer of its format.
func readBack(t *testing.T, format string, content []byte) []conversation.Message {
	t.Helper()
	var s conversation.State
	var err error
	switch format {
	case formatJSON:
		err = json.Unmarshal(content, &s)
	case formatJSONL:
		s, err = conversation.ParseJSONL(content)
	case formatOpenAI:
		var msgs []conversation.OpenAIMessage
		if err = json.Unmarshal(content, &msgs); err == nil {
			s, err = conversation.FromOpenAI(msgs)
		}
	case formatClaude:
		s, err = conversation.ImportClaudeSession(content)
	case formatOpenCode:
		s, err = conversation.ImportOpenCode(content)
	}
	if err != nil {
		t.Fatalf("%s: reading the export back: %v", format, err)
	}
	return s.Messages
}

// An export printed to a terminal cannot drive it: in every format the code points that
// would are \u escapes, and the export reads back in its format's importer to the exact text
// (render's tests show that the escaping keeps any JSON's data).
func TestExportCannotDriveTheTerminal(t *testing.T) {
	s := withDisguisingText(t)
	for _, format := range exportFormats {
		files, err := exportFiles(s, format, exportOptions{sessionID: s.SessionID})
		must(t, err)
		for i, f := range files {
			for _, bad := range []string{"\x1b", "\u009b", "\u202e", "\u2028"} {
				if bytes.Contains(f.Content, []byte(bad)) {
					t.Errorf("%s file %d holds %q raw", format, i, bad)
				}
			}
		}
		if c := string(files[0].Content); !strings.Contains(c, `\u009b`) || !strings.Contains(c, `\u202e`) || !strings.Contains(c, `\u2028`) {
			t.Errorf("%s: the disguising code points are not escaped", format)
		}
		var texts int
		for _, m := range readBack(t, format, files[0].Content) {
			for _, b := range m.Blocks {
				if b.Text == disguising {
					texts++
				}
			}
		}
		if texts != 2 {
			t.Errorf("%s: %d texts read back as written, want 2", format, texts)
		}
	}
}

// A session or agent id comes from the history's writers and names a file under --dir: none
// places a file outside it, and a path printed holds no control character.
func TestExportDirStaysInside(t *testing.T) {
	s := withDisguisingText(t)
	for _, id := range []string{"../escape", "..", `a\b`, "/abs"} {
		if _, err := exportFiles(s, formatClaude, exportOptions{sessionID: id}); err == nil {
			t.Errorf("session id %q: exported", id)
		}
	}
	sub := *s
	sub.Subagents = append([]conversation.Subagent{{AgentID: "../../x", Status: conversation.SubagentCompleted}}, s.Subagents...)
	if _, err := exportFiles(&sub, formatClaude, exportOptions{sessionID: s.SessionID}); err == nil {
		t.Error("agent id ../../x: exported")
	}

	parent := t.TempDir()
	dir := filepath.Join(parent, "config")
	for _, p := range []string{"../outside.jsonl", "projects/../../outside.jsonl", "/outside.jsonl"} {
		files := []conversation.ExportedFile{{Path: "projects/p/ok.jsonl", Content: []byte("{}\n")}, {Path: p, Content: []byte("{}\n")}}
		if err := writeExportDir(&bytes.Buffer{}, dir, files); err == nil {
			t.Errorf("path %q: written", p)
		}
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("a refused export wrote %v", entries)
	}

	var out bytes.Buffer
	files, err := exportFiles(s, formatClaude, exportOptions{sessionID: "s\x1b]0;title\x07"})
	must(t, err)
	must(t, writeExportDir(&out, dir, files))
	if strings.ContainsAny(out.String(), "\x1b\x07") {
		t.Errorf("the paths printed hold control characters: %q", out.String())
	}
}
