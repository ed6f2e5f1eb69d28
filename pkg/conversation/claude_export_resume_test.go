package conversation

import (
	"errors"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// exportedTimestamps returns the timestamp member of every line of the main transcript, as
// written ("<none>" when absent).
func exportedTimestamps(t *testing.T, s *State, opts ClaudeExportOptions) []string {
	t.Helper()
	files, err := ExportClaude(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	lines := nonEmptyLines(files[0].Content)
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		var head struct {
			Timestamp jsontext.Value `json:"timestamp"`
		}
		if err := json.Unmarshal(l, &head); err != nil {
			t.Fatal(err)
		}
		ts := "<none>"
		if len(head.Timestamp) > 0 {
			if err := json.Unmarshal(head.Timestamp, &ts); err != nil {
				t.Fatalf("timestamp %s: %v", head.Timestamp, err)
			}
		}
		out = append(out, ts)
	}
	return out
}

func textMessage(id string, role Role, text string, at time.Time) Message {
	return Message{ID: id, Role: role, Blocks: []Block{{Type: BlockText, Text: text}}, CreatedAt: at}
}

// TestExportClaudeTimestamps: every exported message line carries a timestamp (Claude Code
// 2.1.197 finds no session whose lines lack one): the message's own, or one synthesised from
// its neighbours, never decreasing where synthesised.
func TestExportClaudeTimestamps(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var zero time.Time
	for _, tc := range []struct {
		name     string
		messages []Message
		want     []string
	}{{
		name:     "no message has a time: from the Unix epoch, a millisecond apart",
		messages: []Message{textMessage("m1", RoleUser, "hi", zero), textMessage("m2", RoleAssistant, "hello", zero), textMessage("m3", RoleUser, "go on", zero)},
		want:     []string{"1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.001Z", "1970-01-01T00:00:00.002Z"},
	}, {
		name:     "every message has one: kept, in UTC, to the millisecond",
		messages: []Message{textMessage("m1", RoleUser, "hi", at("2026-03-01T10:00:00.123456+02:00")), textMessage("m2", RoleAssistant, "hello", at("2026-03-01T08:00:05Z"))},
		want:     []string{"2026-03-01T08:00:00.123Z", "2026-03-01T08:00:05.000Z"},
	}, {
		name: "gaps: before the first known time, then after the previous line",
		messages: []Message{
			textMessage("m1", RoleUser, "a", zero), textMessage("m2", RoleAssistant, "b", zero),
			textMessage("m3", RoleUser, "c", at("2026-03-01T08:00:00Z")),
			textMessage("m4", RoleAssistant, "d", zero), textMessage("m5", RoleUser, "e", at("2026-03-01T09:00:00Z")),
			textMessage("m6", RoleAssistant, "f", zero),
		},
		want: []string{
			"2026-03-01T07:59:59.998Z", "2026-03-01T07:59:59.999Z", "2026-03-01T08:00:00.000Z",
			"2026-03-01T08:00:00.001Z", "2026-03-01T09:00:00.000Z", "2026-03-01T09:00:00.001Z",
		},
	}, {
		name: "a message of two lines before the first known time",
		messages: []Message{
			{ID: "m1", Role: RoleAssistant, Blocks: []Block{{Type: BlockText, Text: "a"}, {Type: BlockText, Text: "b"}}},
			textMessage("m2", RoleUser, "c", at("2026-03-01T08:00:00Z")),
		},
		want: []string{"2026-03-01T07:59:59.998Z", "2026-03-01T07:59:59.999Z", "2026-03-01T08:00:00.000Z"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewState("s1")
			s.Messages = tc.messages
			got := exportedTimestamps(t, &s, ClaudeExportOptions{CWD: "/w"})
			if len(got) != len(tc.want) {
				t.Fatalf("%d lines %v, want %v", len(got), got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("line %d: %s, want %s", i+1, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestExportClaudeTimestampOfImportedLine: a transcript line keeps its own timestamp; one
// without a usable timestamp (absent, null) is given one.
func TestExportClaudeTimestampOfImportedLine(t *testing.T) {
	data := `{"type":"user","uuid":"11111111-1111-4111-8111-111111111111","parentUuid":null,"sessionId":"s","timestamp":"2026-01-02T03:04:05.678Z","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"22222222-2222-4222-8222-222222222222","parentUuid":"11111111-1111-4111-8111-111111111111","sessionId":"s","timestamp":null,"message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"hello"}]}}
{"type":"user","uuid":"33333333-3333-4333-8333-333333333333","parentUuid":"22222222-2222-4222-8222-222222222222","sessionId":"s","message":{"role":"user","content":"more"}}
`
	s, err := ImportClaudeJSONL([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	got := exportedTimestamps(t, &s, ClaudeExportOptions{})
	want := []string{"2026-01-02T03:04:05.678Z", "2026-01-02T03:04:05.679Z", "2026-01-02T03:04:05.680Z"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %s, want %s", i+1, got[i], want[i])
		}
	}
}

// TestExportClaudeRealPath: the working directory goes through RealPath before it names the
// project folder and the lines' cwd; its error is reported.
func TestExportClaudeRealPath(t *testing.T) {
	s := NewState("s1")
	s.Messages = []Message{textMessage("m1", RoleUser, "hi", time.Time{})}
	resolve := func(p string) (string, error) {
		if p == "/link" {
			return "/real/dir", nil
		}
		return "", errors.New("no such file")
	}
	files, err := ExportClaude(&s, ClaudeExportOptions{CWD: "/link", RealPath: resolve})
	if err != nil {
		t.Fatal(err)
	}
	if files[0].Path != "projects/-real-dir/s1.jsonl" {
		t.Errorf("path %s", files[0].Path)
	}
	var line struct {
		CWD string `json:"cwd"`
	}
	if err := json.Unmarshal(nonEmptyLines(files[0].Content)[0], &line); err != nil || line.CWD != "/real/dir" {
		t.Errorf("cwd %q (%v)", line.CWD, err)
	}
	if _, err := ExportClaude(&s, ClaudeExportOptions{CWD: "/gone", RealPath: resolve}); err == nil {
		t.Error("an unresolvable working directory exported")
	}
}

// TestExportClaudeAssistantModel: an assistant line always names a model (Claude Code 2.1.197
// hangs resuming a session with an assistant line without one): the message's, or the CLI's
// own "<synthetic>" when it has none.
func TestExportClaudeAssistantModel(t *testing.T) {
	s := NewState("s1")
	s.Messages = []Message{
		textMessage("m1", RoleUser, "hi", time.Time{}),
		textMessage("m2", RoleAssistant, "hello", time.Time{}),
		textMessage("m3", RoleUser, "again", time.Time{}),
		textMessage("m4", RoleAssistant, "still here", time.Time{}),
	}
	s.Messages[3].Model = "claude-sonnet-4-5"
	files, err := ExportClaude(&s, ClaudeExportOptions{CWD: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	var models []string
	for _, l := range nonEmptyLines(files[0].Content) {
		var line struct {
			Type    string `json:"type"`
			Message struct {
				Model *string `json:"model"`
			} `json:"message"`
		}
		if err := json.Unmarshal(l, &line); err != nil {
			t.Fatal(err)
		}
		if line.Type != "assistant" {
			continue
		}
		if line.Message.Model == nil {
			t.Fatalf("assistant line without a model: %s", l)
		}
		models = append(models, *line.Message.Model)
	}
	if len(models) != 2 || models[0] != "<synthetic>" || models[1] != "claude-sonnet-4-5" {
		t.Errorf("models %q", models)
	}
}
