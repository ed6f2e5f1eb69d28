package plugin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/parley-dev/parley/pkg/conversation"
)

// Import formats.
const (
	importAuto     = "auto"
	importClaude   = "claude"
	importOpenCode = "opencode"
	importJSONL    = "jsonl"
	importJSON     = "json"
)

var importFormats = []string{importAuto, importClaude, importOpenCode, importJSONL, importJSON}

// importFile is a file read into the model for kubectl parley import (a Claude Code transcript,
// an OpenCode export, neutral JSONL or a state), with what the reader should be told.
type importFile struct {
	state  conversation.State
	format string
	// subagentFiles are the Claude subagent transcripts read with the main one.
	subagentFiles int
	// digest names the file's content (the import's records and events are named by it).
	digest string
	// carried says that the whole state went through POST …/import (false: messages and
	// events only, on a manager without it).
	carried  bool
	warnings []string
}

// detectFormat tells a transcript's format from its bytes: one JSON object holding
// "messages" is an OpenCode export, one holding "schemaVersion" a Parley state (-o json);
// anything else is JSONL, a Claude Code transcript or neutral messages by its first line.
func detectFormat(data []byte) string {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var probe map[string]json.RawMessage
		if json.Unmarshal(trimmed, &probe) == nil {
			if _, ok := probe["schemaVersion"]; ok {
				return importJSON
			}
			if _, ok := probe["messages"]; ok {
				return importOpenCode
			}
		}
	}
	if conversation.IsClaudeTranscript(data) { // as spec.seed's Auto tells them apart
		return importClaude
	}
	return importJSONL
}

// readImportFile reads a file to import. A Claude Code transcript is read with its subagent
// files: those in subagentDir, or else in <dir>/<session>/subagents/ next to it (the CLI's
// layout). A Claude file whose last line was cut (a crash) is read up to that line, with a
// warning.
func readImportFile(path, format, subagentDir string) (*importFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the transcript: %w", err)
	}
	if format == importAuto {
		format = detectFormat(data)
	}
	sum := sha256.Sum256(data)
	t := &importFile{format: format, digest: hex.EncodeToString(sum[:8])}
	switch format {
	case importClaude:
		if subagentDir == "" {
			subagentDir = filepath.Join(strings.TrimSuffix(path, filepath.Ext(path)), "subagents")
		}
		subs, err := readSubagents(subagentDir)
		if err != nil {
			return nil, err
		}
		t.subagentFiles = len(subs)
		t.state, err = conversation.ImportClaudeSession(data, subs...)
		if errors.Is(err, conversation.ErrTruncatedTranscript) {
			t.warnings = append(t.warnings, fmt.Sprintf("%v: importing the complete lines before it", err))
			err = nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s is not a readable Claude Code transcript: %w", path, err)
		}
	case importOpenCode:
		if t.state, err = conversation.ImportOpenCode(data); err != nil {
			return nil, fmt.Errorf("%s is not a readable OpenCode export: %w", path, err)
		}
	case importJSONL:
		if t.state, err = conversation.ParseJSONL(data); err != nil {
			return nil, fmt.Errorf("%s is not neutral JSONL (one message per line, as kubectl parley export writes): %w", path, err)
		}
	case importJSON:
		if err := json.Unmarshal(data, &t.state); err != nil {
			return nil, fmt.Errorf("%s is not a conversation state (as kubectl parley export -o json writes): %w", path, err)
		}
	default:
		return nil, checkFormat(format, importFormats)
	}
	return t, nil
}

// readSubagents reads agent-<id>.jsonl files of a folder; a missing folder has none.
func readSubagents(dir string) ([]conversation.ClaudeSubagentFile, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "agent-*.jsonl"))
	if err != nil {
		return nil, err
	}
	subs := make([]conversation.ClaudeSubagentFile, 0, len(matches))
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			return nil, fmt.Errorf("reading the subagent transcript: %w", err)
		}
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "agent-"), ".jsonl")
		subs = append(subs, conversation.ClaudeSubagentFile{AgentID: id, Data: data})
	}
	return subs, nil
}

// notCarried says what of a state messages and events cannot carry: transcript records
// (lines that are no message) and the session's own fields (an OpenCode export's info).
func notCarried(s *conversation.State) string {
	var parts []string
	if n := len(s.Records); n > 0 {
		parts = append(parts, fmt.Sprintf("%d transcript record(s) that are no message (queue operations, summaries, snapshots…)", n))
	}
	if len(s.Source.Raw) > 0 {
		parts = append(parts, "the session's own fields ("+s.Source.Kind+" session info)")
	}
	if len(s.Adapters) > 0 {
		parts = append(parts, fmt.Sprintf("%d adapter state report(s)", len(s.Adapters)))
	}
	return strings.Join(parts, ", ")
}

// batch is a run of messages or events small enough for one Session API request.
type batch struct{ start, end int }

// batches cuts n items into runs of at most maxItems items and about maxBytes bytes (size(i)
// is item i's JSON size); an item larger than maxBytes goes alone, and the server judges it.
func batches(n, maxItems, maxBytes int, size func(int) int) []batch {
	var out []batch
	start, bytes := 0, 0
	for i := range n {
		s := size(i)
		if i > start && (i-start >= maxItems || bytes+s > maxBytes) {
			out = append(out, batch{start, i})
			start, bytes = i, 0
		}
		bytes += s
	}
	if start < n {
		out = append(out, batch{start, n})
	}
	return out
}
