package conversation

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley/test/fixtures"
)

const bom = "\xef\xbb\xbf"

func jsonlLines(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

const (
	userLine      = `{"id":"u1","role":"user","blocks":[{"type":"text","text":"hello"}]}`
	assistantLine = `{"id":"a1","role":"assistant","blocks":[{"type":"text","text":"hi"},{"type":"tool_use","toolUseId":"t1","toolName":"Bash","input":{}}]}`
	resultLine    = `{"id":"r1","role":"user","blocks":[{"type":"tool_result","toolUseId":"t1","text":"ok"}]}`
	systemLine    = `{"id":"s","role":"system","blocks":[{"type":"text","text":"Be brief."}]}`
)

func TestIsClaudeTranscript(t *testing.T) {
	claude := fixtures.Read(t, fixtures.ClaudeMain)
	tests := map[string]struct {
		data []byte
		want bool
	}{
		"a Claude Code transcript":                       {claude, true},
		"after a byte order mark and blank lines":        {append([]byte(bom+"\n  \n"), claude...), true},
		"opening with a summary line":                    {jsonlLines(`{"type":"summary","summary":"earlier","leafUuid":"x"}`), true},
		"whose first line is only a summary type":        {jsonlLines(`{"type":"summary","summary":"earlier"}`), true},
		"a first line with bytes that are not UTF-8":     {jsonlLines("{\"type\":\"user\",\"uuid\":\"u1\",\"x\":\"\xb4\"}"), true},
		"neutral messages":                               {jsonlLines(systemLine, userLine, assistantLine, resultLine), false},
		"a first line that is not JSON":                  {jsonlLines(`{"uuid":`, userLine), false},
		"empty":                                          {nil, false},
		"neutral, the transcript's keys on a later line": {jsonlLines(userLine, `{"uuid":"x"}`), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := IsClaudeTranscript(tc.data); got != tc.want {
				t.Errorf("IsClaudeTranscript = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseJSONL(t *testing.T) {
	tests := map[string]struct {
		data []byte

		wantErr      string // part of the error; every error wraps ErrJSONL
		wantMessages []string
		wantRoles    []Role
		wantSystem   string
	}{
		"messages and a system line": {
			data:         jsonlLines(systemLine, userLine, assistantLine, resultLine),
			wantMessages: []string{"u1", "a1", "r1"}, wantSystem: "Be brief.",
			wantRoles: []Role{RoleUser, RoleAssistant, RoleTool},
		},
		"byte order mark, blank lines, CRLF": {
			data: []byte(bom + userLine + "\r\n\r\n" + assistantLine + "\r\n"), wantMessages: []string{"u1", "a1"},
		},
		"unknown fields are tolerated": {
			data:         jsonlLines(`{"id":"u1","role":"user","blocks":[{"type":"text","text":"x"}],"futureField":1}`),
			wantMessages: []string{"u1"},
		},
		"the same message twice is one": {data: jsonlLines(userLine, userLine), wantMessages: []string{"u1"}},
		"empty":                         {data: nil},
		"a system line not first": {
			data: jsonlLines(userLine, systemLine), wantErr: "line 2: a system message must be the first line",
		},
		"two system lines": {
			data: jsonlLines(systemLine, systemLine), wantErr: "line 2: a system message must be the first line",
		},
		"a message without an id, line counted with blank lines": {
			data:    jsonlLines(userLine, "", `{"role":"user","blocks":[{"type":"text","text":"x"}]}`),
			wantErr: "line 3: message has no id",
		},
		"a system line without an id": {data: jsonlLines(`{"role":"system","blocks":[]}`), wantErr: "line 1: message has no id"},
		"not JSON":                    {data: jsonlLines(userLine, `{"id":`), wantErr: "line 2 is not a message"},
		"an id reused for other content": {
			data: jsonlLines(userLine, `{"id":"u1","role":"user","blocks":[{"type":"text","text":"other"}]}`), wantErr: "line 2",
		},
		"a line that is not UTF-8": {
			data: jsonlLines("{\"id\":\"s\",\"role\":\"system\",\"future\":{\"k\xb4\":1}}"), wantErr: "line 1 is not valid UTF-8",
		},
		"a message whose raw input is not UTF-8": {
			data:    jsonlLines(userLine, "{\"id\":\"a\",\"role\":\"assistant\",\"blocks\":[{\"type\":\"tool_use\",\"toolUseId\":\"t\",\"input\":{\"k\":\"\xb4\"}}]}"),
			wantErr: "line 2 is not valid UTF-8",
		},
		"an unknown role": {data: jsonlLines(`{"id":"x","role":"robot"}`), wantErr: "line 1"},
		"a tool result in an assistant message": {
			data: jsonlLines(`{"id":"x","role":"assistant","blocks":[{"type":"tool_result","toolUseId":"t"}]}`), wantErr: "line 1",
		},
		"a Claude transcript": {data: fixtures.Read(t, fixtures.ClaudeMain), wantErr: "line 1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := ParseJSONL(tc.data)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrJSONL) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want ErrJSONL with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("parsed state is invalid: %v", err)
			}
			var ids []string
			var roles []Role
			for _, m := range s.Messages {
				ids, roles = append(ids, m.ID), append(roles, m.Role)
			}
			if tc.wantMessages != nil && !slices.Equal(ids, tc.wantMessages) {
				t.Errorf("messages %v, want %v", ids, tc.wantMessages)
			}
			if tc.wantRoles != nil && !slices.Equal(roles, tc.wantRoles) {
				t.Errorf("roles %v, want %v", roles, tc.wantRoles)
			}
			switch {
			case tc.wantSystem == "" && s.System != nil:
				t.Errorf("unexpected system prompt %+v", s.System)
			case tc.wantSystem != "" && (s.System == nil || s.System.Text() != tc.wantSystem || s.System.Role != RoleSystem):
				t.Errorf("system %+v, want %q", s.System, tc.wantSystem)
			}
		})
	}
}

// Neutral JSONL is numbered as the Session API numbers appends: Seq from 1, turns.
func TestParseJSONLNumbers(t *testing.T) {
	s, err := ParseJSONL(jsonlLines(userLine, `{"id":"a0","seq":99,"role":"assistant","blocks":[{"type":"text","text":"x"}]}`, resultLine))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		seq  int64
		turn int
	}{{1, 1}, {2, 1}, {3, 1}} {
		if m := s.Messages[i]; m.Seq != want.seq || m.Turn != want.turn {
			t.Errorf("message %s: seq %d turn %d, want %d %d", m.ID, m.Seq, m.Turn, want.seq, want.turn)
		}
	}
}
