package conversation

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ErrJSONL wraps every reason neutral JSONL cannot be read; the message says which line and why.
var ErrJSONL = errors.New("conversation: bad JSONL")

// maxJSONLLine bounds one line of neutral JSONL.
const maxJSONLLine = 4 << 20

var byteOrderMark = []byte("\xef\xbb\xbf")

// IsClaudeTranscript tells a Claude Code / Agent SDK transcript from neutral JSONL by its first
// non-blank line: a transcript line carries "sessionId", "uuid", "parentUuid" or "leafUuid", or
// is a "summary" line. Anything else, unreadable lines included, is taken for neutral JSONL.
func IsClaudeTranscript(data []byte) bool {
	var probe map[string]jsontext.Value
	if json.Unmarshal(firstLine(data), &probe, lenientJSON) != nil { // a transcript may hold bytes that are not UTF-8
		return false
	}
	for _, k := range []string{"sessionId", "uuid", "parentUuid", "leafUuid"} {
		if _, ok := probe[k]; ok {
			return true
		}
	}
	t, ok := probe["type"]
	return ok && string(t) == `"summary"`
}

// firstLine is the first line of data that is not blank, without a byte order mark.
func firstLine(data []byte) []byte {
	data = bytes.TrimPrefix(data, byteOrderMark)
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line
		}
		data = rest
	}
	return nil
}

// ParseJSONL reads neutral JSONL: one Message per line, as kubectl parley export writes it. A
// first message of role system becomes the system prompt. The messages are normalised and
// validated as the Session API appends them (ids required and unique, tool results in tool
// messages, Seq and turns numbered afresh). Blank lines, CRLF and a byte order mark are
// tolerated; a line that is not valid UTF-8 is refused, as Parley's own JSON never holds one.
func ParseJSONL(data []byte) (State, error) {
	s := NewState("")
	sc := bufio.NewScanner(bytes.NewReader(bytes.TrimPrefix(data, byteOrderMark)))
	sc.Buffer(make([]byte, 64<<10), maxJSONLLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !utf8.Valid(line) { // raw members would not come back as read
			return State{}, fmt.Errorf("%w: line %d is not valid UTF-8", ErrJSONL, n)
		}
		var m Message
		if err := json.Unmarshal(line, &m, json.RejectUnknownMembers(false)); err != nil {
			return State{}, fmt.Errorf("%w: line %d is not a message: %w", ErrJSONL, n, err)
		}
		if m.ID == "" {
			return State{}, fmt.Errorf("%w: line %d: message has no id", ErrJSONL, n)
		}
		if m.Role == RoleSystem {
			if s.System != nil || len(s.Messages) > 0 {
				return State{}, fmt.Errorf("%w: line %d: a system message must be the first line, and only one", ErrJSONL, n)
			}
			s.System = &m
			continue
		}
		m.Seq = 0
		if _, err := s.AppendMessage(m); err != nil {
			return State{}, fmt.Errorf("%w: line %d: %w", ErrJSONL, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return State{}, fmt.Errorf("%w: after line %d: %w", ErrJSONL, n, err)
	}
	return s, nil
}
