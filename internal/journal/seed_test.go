package journal

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
)

const bom = "\xef\xbb\xbf"

func lines(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

const (
	userLine      = `{"id":"u1","role":"user","blocks":[{"type":"text","text":"hello"}]}`
	assistantLine = `{"id":"a1","role":"assistant","blocks":[{"type":"text","text":"hi"},{"type":"tool_use","toolUseId":"t1","toolName":"Bash","input":{}}]}`
	resultLine    = `{"id":"r1","role":"user","blocks":[{"type":"tool_result","toolUseId":"t1","text":"ok"}]}`
	systemLine    = `{"id":"s","role":"system","blocks":[{"type":"text","text":"Be brief."}]}`
)

func TestParseSeed(t *testing.T) {
	claude := readTestdata(t, "main-transcript.jsonl")
	claudeLines := bytes.SplitAfter(claude, []byte("\n"))
	tests := map[string]struct {
		data   []byte
		format string

		wantFormat   string
		wantErr      string // part of the error; every error wraps ErrSeed
		wantMessages []string
		wantRoles    []conversation.Role
		wantSystem   string
	}{
		"auto: a Claude Code transcript": {
			data: claude, format: SeedAuto, wantFormat: SeedClaudeCode,
			wantMessages: []string{
				"5f2bf2be-de53-402d-842f-67aa80b0e847", "msg_0181BxGX1zUFWYMQmKjWMTiT", "203336cc-7a5f-4bcd-b744-f04eee8d4ce2",
				"cfa954fb-4f42-48e6-abab-2bf9a2d4d536", "5130f755-c40d-4c33-8579-8d265c74e692", "msg_01G6KFVRLHUmNM6wKPdd4cUJ",
				"7ab1f721-fd7b-42cc-8a9f-0c5cfd2e1005", "msg_01YYd6SWZiLs9hTeANyqnbxZ",
			},
		},
		"empty format means auto": {data: claude, wantFormat: SeedClaudeCode, wantMessages: nil},
		"auto: a transcript after a byte order mark and blank lines": {
			data: append([]byte(bom+"\n  \n"), claude...), format: SeedAuto, wantFormat: SeedClaudeCode,
		},
		"auto: a transcript opening with a summary line": {
			data: lines(`{"type":"summary","summary":"earlier","leafUuid":"x"}`), wantFormat: SeedClaudeCode,
		},
		"auto: a transcript whose first line is only a summary type": {
			data: lines(`{"type":"summary","summary":"earlier"}`), wantFormat: SeedClaudeCode,
		},
		"auto: neutral messages": {
			data: lines(systemLine, userLine, assistantLine, resultLine), format: SeedAuto, wantFormat: SeedNeutral,
			wantMessages: []string{"u1", "a1", "r1"}, wantSystem: "Be brief.",
			wantRoles: []conversation.Role{conversation.RoleUser, conversation.RoleAssistant, conversation.RoleTool},
		},
		"neutral: byte order mark, blank lines, CRLF": {
			data: []byte(bom + userLine + "\r\n\r\n" + assistantLine + "\r\n"), format: SeedNeutral, wantFormat: SeedNeutral,
			wantMessages: []string{"u1", "a1"},
		},
		"neutral: unknown fields are tolerated": {
			data: lines(`{"id":"u1","role":"user","blocks":[{"type":"text","text":"x"}],"futureField":1}`), format: SeedNeutral,
			wantFormat: SeedNeutral, wantMessages: []string{"u1"},
		},
		"neutral: the same message twice is one": {
			data: lines(userLine, userLine), format: SeedNeutral, wantFormat: SeedNeutral, wantMessages: []string{"u1"},
		},
		"neutral: empty": {data: nil, format: SeedNeutral, wantFormat: SeedNeutral},
		"neutral: a system line not first": {
			data: lines(userLine, systemLine), format: SeedNeutral, wantFormat: SeedNeutral,
			wantErr: "line 2: a system message must be the first line",
		},
		"neutral: two system lines": {
			data: lines(systemLine, systemLine), format: SeedNeutral, wantFormat: SeedNeutral,
			wantErr: "line 2: a system message must be the first line",
		},
		"neutral: a message without an id, line counted with blank lines": {
			data: lines(userLine, "", `{"role":"user","blocks":[{"type":"text","text":"x"}]}`), format: SeedNeutral,
			wantFormat: SeedNeutral, wantErr: "line 3: message has no id",
		},
		"neutral: a system line without an id": {
			data: lines(`{"role":"system","blocks":[]}`), format: SeedNeutral, wantFormat: SeedNeutral, wantErr: "line 1: message has no id",
		},
		"neutral: not JSON": {
			data: lines(userLine, `{"id":`), format: SeedNeutral, wantFormat: SeedNeutral, wantErr: "line 2 is not a message",
		},
		"neutral: an id reused for other content": {
			data: lines(userLine, `{"id":"u1","role":"user","blocks":[{"type":"text","text":"other"}]}`), format: SeedNeutral,
			wantFormat: SeedNeutral, wantErr: "line 2",
		},
		"neutral: a line that is not UTF-8": {
			data: lines("{\"id\":\"s\",\"role\":\"system\",\"future\":{\"k\xb4\":1}}"), format: SeedNeutral,
			wantFormat: SeedNeutral, wantErr: "line 1 is not valid UTF-8",
		},
		"neutral: a message whose raw input is not UTF-8": {
			data:   lines(userLine, "{\"id\":\"a\",\"role\":\"assistant\",\"blocks\":[{\"type\":\"tool_use\",\"toolUseId\":\"t\",\"input\":{\"k\":\"\xb4\"}}]}"),
			format: SeedNeutral, wantFormat: SeedNeutral, wantErr: "line 2 is not valid UTF-8",
		},
		"claude: bytes that are not UTF-8 are read as U+FFFD": {
			data:   lines("{\"type\":\"user\",\"uuid\":\"u1\",\"sessionId\":\"s\",\"x\":\"\xb4\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}"),
			format: SeedAuto, wantFormat: SeedClaudeCode, wantMessages: []string{"u1"},
		},
		"neutral: an unknown role": {
			data: lines(`{"id":"x","role":"robot"}`), format: SeedNeutral, wantFormat: SeedNeutral, wantErr: "line 1",
		},
		"neutral: a tool result in an assistant message": {
			data: lines(`{"id":"x","role":"assistant","blocks":[{"type":"tool_result","toolUseId":"t"}]}`), format: SeedNeutral,
			wantFormat: SeedNeutral, wantErr: "line 1",
		},
		"neutral: a Claude transcript declared neutral": {
			data: claude, format: SeedNeutral, wantFormat: SeedNeutral, wantErr: "line 1",
		},
		"claude: a last line cut short is refused": {
			data: bytes.Join([][]byte{claudeLines[0], claudeLines[1], claudeLines[2][:40]}, nil), format: SeedAuto,
			wantFormat: SeedClaudeCode, wantErr: "not a readable Claude Code transcript",
		},
		"unknown format": {data: claude, format: "Yaml", wantFormat: "Yaml", wantErr: `unknown format "Yaml"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, format, err := ParseSeed(tc.data, tc.format)
			if format != tc.wantFormat {
				t.Errorf("format %q, want %q", format, tc.wantFormat)
			}
			if tc.wantErr != "" {
				if !errors.Is(err, ErrSeed) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want ErrSeed with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("parsed seed is invalid: %v", err)
			}
			var ids []string
			var roles []conversation.Role
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
			case tc.wantSystem != "" && (s.System == nil || s.System.Text() != tc.wantSystem || s.System.Role != conversation.RoleSystem):
				t.Errorf("system %+v, want %q", s.System, tc.wantSystem)
			}
		})
	}
}

// A neutral seed is numbered as the Session API numbers appends: Seq from 1, turns.
func TestParseSeedNumbers(t *testing.T) {
	s, _, err := ParseSeed(lines(userLine, `{"id":"a0","seq":99,"role":"assistant","blocks":[{"type":"text","text":"x"}]}`, resultLine), SeedNeutral)
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

// FuzzParseSeed: no input panics, and what parses as a neutral seed keeps the model's
// invariants and survives the journal (records, then a view) unchanged.
func FuzzParseSeed(f *testing.F) {
	f.Add(readTestdata(f, "main-transcript.jsonl"), uint8(0))
	f.Add(lines(systemLine, userLine, assistantLine, resultLine), uint8(1))
	f.Add([]byte(bom+userLine+"\r\n"), uint8(0))
	f.Add(lines(`{"type":"summary","summary":"s"}`), uint8(2))
	f.Add(lines(userLine, `{"id":"u1","role":"user","blocks":[{"type":"text","text":"other"}]}`), uint8(1))
	formats := []string{SeedAuto, SeedNeutral, SeedClaudeCode}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		s, format, err := ParseSeed(data, formats[int(which)%len(formats)])
		if err != nil {
			if !errors.Is(err, ErrSeed) {
				t.Fatalf("error without ErrSeed: %v", err)
			}
			return
		}
		if format != SeedNeutral {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("parsed neutral seed is invalid: %v", err)
		}
		records, err := StateRecords(&s, "seed:")
		if err != nil {
			t.Fatalf("StateRecords: %v", err)
		}
		v := NewView("", nil)
		for i, r := range records {
			if err := v.Apply(historyEntry(i, r)); err != nil {
				t.Fatalf("apply %s: %v", r.ID, err)
			}
		}
		if len(v.State.Messages) != len(s.Messages) || (v.State.System == nil) != (s.System == nil) {
			t.Fatalf("the journal kept %d messages (system %v) of %d (system %v)",
				len(v.State.Messages), v.State.System != nil, len(s.Messages), s.System != nil)
		}
		if err := v.State.Validate(); err != nil {
			t.Fatalf("folded seed is invalid: %v", err)
		}
	})
}
