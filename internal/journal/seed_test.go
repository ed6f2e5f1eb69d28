package journal

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/test/fixtures"
)

const bom = "\xef\xbb\xbf"

func lines(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

const (
	userLine      = `{"id":"u1","role":"user","blocks":[{"type":"text","text":"hello"}]}`
	assistantLine = `{"id":"a1","role":"assistant","blocks":[{"type":"text","text":"hi"},{"type":"tool_use","toolUseId":"t1","toolName":"Bash","input":{}}]}`
	resultLine    = `{"id":"r1","role":"user","blocks":[{"type":"tool_result","toolUseId":"t1","text":"ok"}]}`
	systemLine    = `{"id":"s","role":"system","blocks":[{"type":"text","text":"Be brief."}]}`
)

// TestParseSeed covers the choice of format; conversation.ParseJSONL and ImportClaudeJSONL
// have their own tests of what each format accepts.
func TestParseSeed(t *testing.T) {
	claude := fixtures.Read(t, fixtures.ClaudeMain)
	claudeLines := bytes.SplitAfter(claude, []byte("\n"))
	tests := map[string]struct {
		data   []byte
		format parleyv1alpha1.SeedFormat

		wantFormat   parleyv1alpha1.SeedFormat
		wantErr      string // part of the error; every error wraps ErrSeed
		wantMessages []string
		wantSystem   string
	}{
		"auto: a Claude Code transcript": {
			data: claude, format: parleyv1alpha1.SeedFormatAuto, wantFormat: parleyv1alpha1.SeedFormatClaudeCode,
			wantMessages: []string{
				"5f2bf2be-de53-402d-842f-67aa80b0e847", "msg_0181BxGX1zUFWYMQmKjWMTiT", "203336cc-7a5f-4bcd-b744-f04eee8d4ce2",
				"cfa954fb-4f42-48e6-abab-2bf9a2d4d536", "5130f755-c40d-4c33-8579-8d265c74e692", "msg_01G6KFVRLHUmNM6wKPdd4cUJ",
				"7ab1f721-fd7b-42cc-8a9f-0c5cfd2e1005", "msg_01YYd6SWZiLs9hTeANyqnbxZ",
			},
		},
		"auto: a transcript after a byte order mark and blank lines": {
			data: append([]byte(bom+"\n  \n"), claude...), format: parleyv1alpha1.SeedFormatAuto, wantFormat: parleyv1alpha1.SeedFormatClaudeCode,
		},
		"auto: neutral messages": {
			data: lines(systemLine, userLine, assistantLine, resultLine), format: parleyv1alpha1.SeedFormatAuto,
			wantFormat: parleyv1alpha1.SeedFormatNeutral, wantMessages: []string{"u1", "a1", "r1"}, wantSystem: "Be brief.",
		},
		"neutral: an error names the line": {
			data: lines(userLine, systemLine), format: parleyv1alpha1.SeedFormatNeutral, wantFormat: parleyv1alpha1.SeedFormatNeutral,
			wantErr: "line 2: a system message must be the first line",
		},
		"neutral: a Claude transcript declared neutral": {
			data: claude, format: parleyv1alpha1.SeedFormatNeutral, wantFormat: parleyv1alpha1.SeedFormatNeutral, wantErr: "line 1",
		},
		"claude: bytes that are not UTF-8 are read as U+FFFD": {
			data:   lines("{\"type\":\"user\",\"uuid\":\"u1\",\"sessionId\":\"s\",\"x\":\"\xb4\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}"),
			format: parleyv1alpha1.SeedFormatAuto, wantFormat: parleyv1alpha1.SeedFormatClaudeCode, wantMessages: []string{"u1"},
		},
		"claude: a last line cut short is refused": {
			data: bytes.Join([][]byte{claudeLines[0], claudeLines[1], claudeLines[2][:40]}, nil), format: parleyv1alpha1.SeedFormatAuto,
			wantFormat: parleyv1alpha1.SeedFormatClaudeCode, wantErr: "not a readable Claude Code transcript",
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
			for _, m := range s.Messages {
				ids = append(ids, m.ID)
			}
			if tc.wantMessages != nil && !slices.Equal(ids, tc.wantMessages) {
				t.Errorf("messages %v, want %v", ids, tc.wantMessages)
			}
			system := ""
			if s.System != nil {
				system = s.System.Text()
			}
			if system != tc.wantSystem {
				t.Errorf("system %q, want %q", system, tc.wantSystem)
			}
		})
	}
}

// FuzzParseSeed: no input panics, and what parses as a neutral seed keeps the model's
// invariants and survives the journal (records, then a view) unchanged.
func FuzzParseSeed(f *testing.F) {
	f.Add(fixtures.Read(f, fixtures.ClaudeMain), uint8(0))
	f.Add(lines(systemLine, userLine, assistantLine, resultLine), uint8(1))
	f.Add([]byte(bom+userLine+"\r\n"), uint8(0))
	f.Add(lines(`{"type":"summary","summary":"s"}`), uint8(2))
	f.Add(lines(userLine, `{"id":"u1","role":"user","blocks":[{"type":"text","text":"other"}]}`), uint8(1))
	formats := []parleyv1alpha1.SeedFormat{parleyv1alpha1.SeedFormatAuto, parleyv1alpha1.SeedFormatNeutral, parleyv1alpha1.SeedFormatClaudeCode}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		s, format, err := ParseSeed(data, formats[int(which)%len(formats)])
		if err != nil {
			if !errors.Is(err, ErrSeed) {
				t.Fatalf("error without ErrSeed: %v", err)
			}
			return
		}
		if format != parleyv1alpha1.SeedFormatNeutral {
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
