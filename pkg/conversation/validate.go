package conversation

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// ErrInvalid wraps every invariant violation Validate and AppendMessage report.
var ErrInvalid = errors.New("conversation: invalid")

// ErrConflict is returned when an append reuses a message id with different content.
var ErrConflict = errors.New("conversation: message id already used for other content")

// Validate checks the model's invariants (see the package documentation) on the main thread
// and every subagent thread: a schema version, unique non-empty message ids, known roles,
// strictly increasing Seq, tool results only in RoleTool messages, no block without a type,
// raw JSON values that are valid UTF-8 (see utf8.go).
func (s *State) Validate() error {
	if s.SchemaVersion == "" {
		return fmt.Errorf("%w: no schema version", ErrInvalid)
	}
	if s.System != nil && s.System.Role != RoleSystem {
		return fmt.Errorf("%w: system message has role %q", ErrInvalid, s.System.Role)
	}
	// Messages are checked with their thread; here what belongs to no thread.
	if !rawUTF8(func(f func(*jsontext.Value)) {
		f(&s.Extra)
		f(&s.Source.Raw)
		if s.System != nil {
			eachRawOfMessage(s.System, f)
		}
		for i := range s.Records {
			f(&s.Records[i].Raw)
		}
		for _, sub := range flattenSubagents(s.Subagents) {
			f(&sub.Extra)
		}
	}) {
		return fmt.Errorf("%w: %w", ErrInvalid, errRawUTF8)
	}
	if err := validateThread("main", s.Messages); err != nil {
		return err
	}
	for _, sub := range flattenSubagents(s.Subagents) {
		if err := validateThread("subagent "+sub.ToolUseID+sub.AgentID, sub.Messages); err != nil {
			return err
		}
	}
	return nil
}

// errRawUTF8 says why a raw value that is not valid UTF-8 is refused.
var errRawUTF8 = errors.New("raw JSON is not valid UTF-8 (it would not come back as stored)")

func validateThread(name string, msgs []Message) error {
	seen := make(map[string]bool, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		bad := func(why string) error {
			return fmt.Errorf("%w: %s message %d (%s): %s", ErrInvalid, name, i, m.ID, why)
		}
		switch {
		case m.ID == "":
			return bad("no id")
		case seen[m.ID]:
			return bad("duplicate id")
		case !validRole(m.Role):
			return bad(fmt.Sprintf("unknown role %q", m.Role))
		case i > 0 && m.Seq <= msgs[i-1].Seq:
			return bad("seq does not increase")
		case m.Role != RoleTool && m.HasToolResult():
			return bad("tool_result outside a tool message")
		case !rawUTF8(func(f func(*jsontext.Value)) { eachRawOfMessage(m, f) }):
			return bad(errRawUTF8.Error())
		}
		for k := range m.Blocks {
			if m.Blocks[k].Type == "" {
				return bad(fmt.Sprintf("block %d has no type", k))
			}
		}
		seen[m.ID] = true
	}
	return nil
}

// ToolPairing reports tool calls without a result and results without a call, in order, for
// one thread. Compaction must never create either.
func ToolPairing(msgs []Message) (unanswered, orphans []string) {
	called := map[string]bool{}
	answered := map[string]bool{}
	for i := range msgs {
		for _, id := range msgs[i].ToolResultIDs() {
			if !called[id] {
				orphans = append(orphans, id)
			}
			answered[id] = true
		}
		for _, id := range msgs[i].ToolUseIDs() {
			called[id] = true
		}
	}
	for i := range msgs {
		for _, id := range msgs[i].ToolUseIDs() {
			if !answered[id] {
				unanswered = append(unanswered, id)
			}
		}
	}
	return unanswered, orphans
}

// AppendMessage appends a message to the main thread, in place, the way the Session API
// needs: idempotent by id (appending the same message again is a no-op and returns false; the
// same id with other content is ErrConflict), Seq assigned when zero (else it must increase),
// Turn numbered, and a user message holding tool results made RoleTool.
func (s *State) AppendMessage(m Message) (bool, error) {
	if m.Role == RoleUser && m.HasToolResult() {
		m.Role = RoleTool
		m.Blocks = resultsFirst(m.Blocks)
	}
	if i := lastIndex(s.Messages, m.ID); i >= 0 {
		if sameContent(&s.Messages[i], &m) {
			return false, nil
		}
		return false, fmt.Errorf("%w: %s", ErrConflict, m.ID)
	}
	last := int64(0)
	if n := len(s.Messages); n > 0 {
		last = s.Messages[n-1].Seq
	}
	if m.Seq == 0 {
		m.Seq = last + 1
	}
	m.Turn = nextTurn(s.Messages, m.Role)
	if err := validateThread("appended", []Message{{ID: "previous", Role: RoleUser, Seq: last}, m}); err != nil {
		return false, err
	}
	s.Messages = append(s.Messages, m)
	return true, nil
}

// sameContent compares what a retried append must repeat: role and blocks.
func sameContent(a, b *Message) bool {
	return a.Role == b.Role && sameBlocks(a.Blocks, b.Blocks)
}

func sameBlocks(a, b []Block) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Type != y.Type || x.Text != y.Text || x.ToolUseID != y.ToolUseID || x.ToolName != y.ToolName ||
			x.Arguments != y.Arguments || string(x.Input) != string(y.Input) || x.IsError != y.IsError ||
			string(x.Raw) != string(y.Raw) || !sameBlocks(x.Content, y.Content) {
			return false
		}
	}
	return true
}
