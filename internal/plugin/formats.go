package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/parley-dev/parley/internal/plugin/render"
	"github.com/parley-dev/parley/pkg/conversation"
)

// Export formats: each is written by pkg/conversation's own exporters and converters.
const (
	formatJSON     = "json"     // the whole state, lossless (system, messages, subagents, records)
	formatJSONL    = "jsonl"    // neutral: the system prompt, then one message per line (a seed)
	formatClaude   = "claude"   // Claude Code transcript (ExportClaude)
	formatOpenAI   = "openai"   // OpenAI chat messages (ToOpenAI)
	formatOpenCode = "opencode" // OpenCode session export (ExportOpenCode)
)

var exportFormats = []string{formatJSONL, formatJSON, formatClaude, formatOpenAI, formatOpenCode}

func checkFormat(format string, allowed []string) error {
	if slices.Contains(allowed, format) {
		return nil
	}
	return fmt.Errorf("unknown output format %q: use one of %s", format, strings.Join(allowed, ", "))
}

// exportOptions say which session and directory a transcript export is for.
type exportOptions struct {
	sessionID string
	cwd       string
}

// exportFiles renders the state in a format. Every format but claude is one file (path "");
// claude gives the main transcript first, then one file per subagent, at paths relative to
// a CLAUDE_CONFIG_DIR. Every format is JSON, written with the code points that could drive
// or disguise a terminal as escapes (render.JSON): the same data for every reader.
func exportFiles(s *conversation.State, format string, opts exportOptions) ([]conversation.ExportedFile, error) {
	files, err := encodeFormat(s, format, opts)
	if err != nil {
		return nil, err
	}
	for i := range files {
		files[i].Content = render.JSON(files[i].Content)
	}
	return files, nil
}

// encodeFormat is the state in a format, as pkg/conversation's exporters write it.
func encodeFormat(s *conversation.State, format string, opts exportOptions) ([]conversation.ExportedFile, error) {
	one := func(b []byte, err error) ([]conversation.ExportedFile, error) {
		if err != nil {
			return nil, err
		}
		return []conversation.ExportedFile{{Content: b}}, nil
	}
	switch format {
	case formatJSON:
		return one(indentJSON(s))
	case formatJSONL:
		return one(neutralJSONL(s))
	case formatOpenAI:
		msgs, err := conversation.ToOpenAI(s)
		if err != nil {
			return nil, fmt.Errorf("converting to OpenAI messages: %w", err)
		}
		return one(indentJSON(msgs))
	case formatOpenCode:
		b, err := conversation.ExportOpenCode(s, conversation.OpenCodeExportOptions{SessionID: opts.sessionID, Directory: opts.cwd})
		if err != nil {
			return nil, fmt.Errorf("exporting to OpenCode: %w", err)
		}
		return one(b, nil)
	case formatClaude:
		files, err := conversation.ExportClaude(s, conversation.ClaudeExportOptions{SessionID: opts.sessionID, CWD: opts.cwd})
		if err != nil {
			return nil, fmt.Errorf("exporting to a Claude Code transcript: %w", err)
		}
		return files, nil
	}
	return nil, checkFormat(format, exportFormats)
}

func indentJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// neutralJSONL is the main thread as neutral JSONL, the format a seed reads: the system prompt
// as a first line of role system, then one message per line.
func neutralJSONL(s *conversation.State) ([]byte, error) {
	var buf bytes.Buffer
	write := func(m *conversation.Message) error {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
		return nil
	}
	if s.System != nil {
		if err := write(s.System); err != nil {
			return nil, err
		}
	}
	for i := range s.Messages {
		if err := write(&s.Messages[i]); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// leftOut says what a one-file format does not hold of the state, for a warning.
func leftOut(s *conversation.State, format string) string {
	var parts []string
	switch format {
	case formatJSONL, formatOpenAI:
		if n := len(s.Subagents); n > 0 {
			parts = append(parts, fmt.Sprintf("%d subagent thread(s)", n))
		}
		if n := len(s.Records); n > 0 {
			parts = append(parts, fmt.Sprintf("%d transcript record(s)", n))
		}
	case formatOpenCode:
		if n := len(s.Subagents); n > 0 {
			parts = append(parts, fmt.Sprintf("%d subagent thread(s)", n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s leaves out %s; -o json holds everything", format, strings.Join(parts, " and "))
}

func writeAll(w io.Writer, b []byte) error {
	_, err := w.Write(b)
	return err
}
