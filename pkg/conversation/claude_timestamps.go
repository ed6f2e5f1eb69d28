package conversation

import (
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// claudeTimestampLayout is how the Claude CLI writes timestamps (JavaScript's toISOString).
const claudeTimestampLayout = "2006-01-02T15:04:05.000Z"

// claudeClock gives every exported message line a timestamp. Claude Code 2.1.197 does not
// load a session whose message lines lack one ("No conversation found with session ID"),
// while a message from the Session API or an OpenAI import may have no CreatedAt. A line
// takes its message's CreatedAt, or one millisecond after the line before it; lines before
// the first message that has a time end just before that time, and a thread where no
// message has one counts from the Unix epoch. The result depends only on the state, so the
// same state always exports the same bytes.
type claudeClock struct {
	last time.Time // the previous line's timestamp
}

func newClaudeClock(messages []Message) claudeClock {
	lines := 0
	for i := range messages {
		if t := messages[i].CreatedAt; !t.IsZero() {
			return claudeClock{last: t.Add(-time.Duration(lines+1) * time.Millisecond)}
		}
		lines += len(lineGroups(&messages[i]))
	}
	return claudeClock{last: time.Unix(0, 0).Add(-time.Millisecond)}
}

// stamp returns the timestamp of a line of a message created at created (zero: unknown).
func (c *claudeClock) stamp(created time.Time) string {
	t := created
	if t.IsZero() {
		t = c.last.Add(time.Millisecond)
	}
	c.last = t
	return t.UTC().Format(claudeTimestampLayout)
}

// keep notes a timestamp a source line already carries, and reports whether it is one (a
// string the CLI can parse); a line without a usable one gets stamp instead.
func (c *claudeClock) keep(line jsontext.Value) bool {
	var head struct {
		Timestamp jsontext.Value `json:"timestamp"`
	}
	if json.Unmarshal(line, &head, lenientJSON) != nil || head.Timestamp.Kind() != '"' {
		return false
	}
	var s string
	if json.Unmarshal(head.Timestamp, &s, lenientJSON) != nil {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return false
	}
	c.last = t
	return true
}
