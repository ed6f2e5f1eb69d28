package journal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/pkg/conversation"
)

// Seed formats, as spec.seed.format names them.
const (
	SeedAuto       = "Auto"
	SeedNeutral    = "Neutral"
	SeedClaudeCode = "ClaudeCode"
)

// ErrSeed wraps every reason a seed cannot be read; the message says which line and why.
var ErrSeed = errors.New("seed")

// maxSeedLine bounds one JSONL line of a seed (a ConfigMap value is at most 1 MiB anyway).
const maxSeedLine = 4 << 20

// ParseSeed reads a seed: neutral JSONL (one conversation.Message per line; a first message of
// role system becomes the system prompt) or a Claude Code / Agent SDK transcript. Auto picks the
// format from the first line: Claude transcript lines carry "sessionId", "uuid" or "parentUuid"
// (or are a "summary" line). A transcript whose last line was cut is refused rather than
// half-imported.
func ParseSeed(data []byte, format string) (conversation.State, string, error) {
	if format == "" || format == SeedAuto {
		format = detectSeed(data)
	}
	switch format {
	case SeedClaudeCode:
		s, err := conversation.ImportClaudeJSONL(data)
		if err != nil {
			return conversation.State{}, format, fmt.Errorf("%w: not a readable Claude Code transcript: %w", ErrSeed, err)
		}
		return s, format, nil
	case SeedNeutral:
		s, err := parseNeutral(data)
		return s, format, err
	default:
		return conversation.State{}, format, fmt.Errorf("%w: unknown format %q (Auto, Neutral or ClaudeCode)", ErrSeed, format)
	}
}

func detectSeed(data []byte) string {
	line := firstLine(data)
	var probe map[string]jsontext.Value
	if json.Unmarshal(line, &probe, codec) == nil { // a transcript may hold bytes that are not UTF-8
		for _, k := range []string{"sessionId", "uuid", "parentUuid", "leafUuid"} {
			if _, ok := probe[k]; ok {
				return SeedClaudeCode
			}
		}
		if t, ok := probe["type"]; ok && string(t) == `"summary"` {
			return SeedClaudeCode
		}
	}
	return SeedNeutral
}

func firstLine(data []byte) []byte {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line
		}
		data = rest
	}
	return nil
}

// parseNeutral reads JSONL of neutral messages, normalised and validated as the Session API
// appends them (ids required and unique, tool results in tool messages, turns numbered).
func parseNeutral(data []byte) (conversation.State, error) {
	s := conversation.NewState("")
	sc := bufio.NewScanner(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	sc.Buffer(make([]byte, 64<<10), maxSeedLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !utf8.Valid(line) { // Parley's own JSON: raw members would not come back as read
			return conversation.State{}, fmt.Errorf("%w: line %d is not valid UTF-8", ErrSeed, n)
		}
		var m conversation.Message
		if err := json.Unmarshal(line, &m, json.RejectUnknownMembers(false)); err != nil {
			return conversation.State{}, fmt.Errorf("%w: line %d is not a message: %w", ErrSeed, n, err)
		}
		if m.ID == "" {
			return conversation.State{}, fmt.Errorf("%w: line %d: message has no id", ErrSeed, n)
		}
		if m.Role == conversation.RoleSystem {
			if s.System != nil || len(s.Messages) > 0 {
				return conversation.State{}, fmt.Errorf("%w: line %d: a system message must be the first line, and only one", ErrSeed, n)
			}
			s.System = &m
			continue
		}
		m.Seq = 0
		if _, err := s.AppendMessage(m); err != nil {
			return conversation.State{}, fmt.Errorf("%w: line %d: %w", ErrSeed, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return conversation.State{}, fmt.Errorf("%w: after line %d: %w", ErrSeed, n, err)
	}
	return s, nil
}
