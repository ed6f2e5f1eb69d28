package conversation

import (
	"fmt"
	"slices"
)

// Reduce applies one event to a state and returns the new state. It never mutates its input:
// every slice on the path to a change is copied (path copying), everything else is shared, so
// the old state stays valid and a caller may reduce the same state twice (a fork).
//
// Semantics (the agent-converters seed):
//   - block:upsert replaces the block with the same ID (or at Index), else appends it; the
//     message is created when missing; a user message given a tool_result becomes RoleTool;
//     a tool_result in an assistant or system message is refused (ErrEvent). A new message
//     gets the event's Seq, which must follow the thread's last one (else ErrEvent), or the
//     last plus one when the event has none (as AppendMessage numbers them); Turn is always
//     computed. The Seq and Turn of an existing message never change.
//   - block:delta appends text to a text or thinking block; a delta for a block not yet
//     upserted, an empty delta, or a delta for any other block kind changes nothing.
//   - subagent:spawned / subagent:completed create or update the nested thread found by
//     tool use id or agent id; events for an unknown thread create it (events can arrive out
//     of order).
//   - session:idle marks every pending block complete.
func Reduce(s State, e Event) (State, error) {
	return reducer{}.apply(s, e)
}

// Apply applies one event to the state in place, with Reduce's semantics but without
// copying: the state's slices are reused and grown. Use it on a state nothing else shares,
// e.g. the Session API's live copy of a conversation, where copying per streamed token
// would cost O(messages).
func (s *State) Apply(e Event) error {
	out, err := reducer{inPlace: true}.apply(*s, e)
	if err == nil {
		*s = out
	}
	return err
}

// reducer holds the one difference between Reduce and Apply: whether slices on the path to a
// change are copied (Reduce) or edited in place (Apply).
type reducer struct{ inPlace bool }

func cloneFor[T any](r reducer, xs []T) []T {
	if r.inPlace {
		return xs
	}
	return slices.Clone(xs)
}

func appendFor[T any](r reducer, xs []T, x T) []T {
	if r.inPlace {
		return append(xs, x)
	}
	return append(slices.Clip(xs), x)
}

func (r reducer) apply(s State, e Event) (State, error) {
	if err := e.Validate(); err != nil {
		return s, err
	}
	switch e.Type {
	case EventBlockUpsert:
		var err error
		out := r.updateThread(s, e.ConversationID, func(msgs []Message) []Message {
			var next []Message
			if next, err = r.upsert(msgs, &e); err != nil {
				return msgs
			}
			return next
		})
		if err != nil {
			return s, err
		}
		return out, nil
	case EventBlockDelta:
		if e.Delta == "" {
			return s, nil
		}
		if findThread(&s, e.ConversationID) == nil {
			return s, nil
		}
		return r.updateThread(s, e.ConversationID, func(msgs []Message) []Message { return r.appendDelta(msgs, &e) }), nil
	case EventSubagentSpawned, EventSubagentCompleted:
		return r.reduceSubagent(s, &e), nil
	default: // EventSessionIdle
		s.Messages = r.finalize(s.Messages)
		s.Subagents = r.finalizeSubagents(s.Subagents)
		return s, nil
	}
}

// ReduceAll applies events in order, stopping at the first error.
func ReduceAll(s State, events []Event) (State, error) {
	for i := range events {
		var err error
		if s, err = Reduce(s, events[i]); err != nil {
			return s, err
		}
	}
	return s, nil
}

func isMain(id string) bool { return id == "" || id == MainThread }

// findThread returns the messages of a thread, or nil when it does not exist.
func findThread(s *State, id string) *[]Message {
	if isMain(id) {
		return &s.Messages
	}
	if path := subagentPath(s.Subagents, id); path != nil {
		sub := &s.Subagents[path[0]]
		for _, i := range path[1:] {
			sub = &sub.Subagents[i]
		}
		return &sub.Messages
	}
	return nil
}

// subagentPath finds a subagent by tool use id or agent id, depth first, and returns the
// indices leading to it.
func subagentPath(subs []Subagent, id string) []int {
	for i := range subs {
		if subs[i].ToolUseID == id || subs[i].AgentID == id {
			return []int{i}
		}
		if p := subagentPath(subs[i].Subagents, id); p != nil {
			return append([]int{i}, p...)
		}
	}
	return nil
}

// FindSubagent returns the subagent with this tool use id or agent id.
func (s *State) FindSubagent(id string) (*Subagent, bool) {
	path := subagentPath(s.Subagents, id)
	if path == nil {
		return nil, false
	}
	sub := &s.Subagents[path[0]]
	for _, i := range path[1:] {
		sub = &sub.Subagents[i]
	}
	return sub, true
}

// updateThread replaces a thread's messages with edit(old), copying the subagent slices on
// the way; an unknown thread is created as a running subagent keyed by its id.
func (r reducer) updateThread(s State, id string, edit func([]Message) []Message) State {
	if isMain(id) {
		s.Messages = edit(s.Messages)
		return s
	}
	path := subagentPath(s.Subagents, id)
	if path == nil {
		s.Subagents = appendFor(r, s.Subagents, Subagent{ToolUseID: id, Status: SubagentRunning})
		path = []int{len(s.Subagents) - 1}
	}
	s.Subagents = r.updateSubagent(s.Subagents, path, func(sub *Subagent) { sub.Messages = edit(sub.Messages) })
	return s
}

// updateSubagent returns a copy of subs with the subagent at path changed by edit.
func (r reducer) updateSubagent(subs []Subagent, path []int, edit func(*Subagent)) []Subagent {
	out := cloneFor(r, subs)
	sub := &out[path[0]]
	if len(path) == 1 {
		edit(sub)
	} else {
		sub.Subagents = r.updateSubagent(sub.Subagents, path[1:], edit)
	}
	return out
}

// lastIndex finds a message by id from the end: events almost always touch recent messages.
func lastIndex(msgs []Message, id string) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].ID == id {
			return i
		}
	}
	return -1
}

func (r reducer) upsert(msgs []Message, e *Event) ([]Message, error) {
	i := lastIndex(msgs, e.Message.ID)
	var m Message
	if i < 0 {
		m = *e.Message
		m.Blocks = nil
		if m.Role == "" {
			m.Role = RoleUser
		}
		// Seq must increase along the thread (the model's invariant), and the seq comes from
		// the event, i.e. from the agent: as AppendMessage does, a zero seq is assigned and
		// any other must follow the last one, else the event is refused. Trusting it would
		// let one event put a message out of order (or wrap around past the largest seq).
		last := int64(0)
		if n := len(msgs); n > 0 {
			last = msgs[n-1].Seq
		}
		if m.Seq == 0 {
			m.Seq = last + 1
		}
		if m.Seq <= last {
			return nil, fmt.Errorf("%w: %s: message %s: seq %d does not follow the thread's last seq %d", ErrEvent, e.Type, m.ID, m.Seq, last)
		}
	} else {
		m = msgs[i]
		mergeHeader(&m, e.Message)
	}
	if e.Block != nil {
		m.Blocks = r.upsertBlock(m.Blocks, e.Block, e.Index)
	}
	if m.Role == RoleUser && m.HasToolResult() {
		m.Role = RoleTool
		m.Blocks = resultsFirst(m.Blocks)
	}
	if m.Role != RoleTool && m.HasToolResult() {
		// Results live only in RoleTool messages; no provider puts one in an assistant
		// or system message, so the event (or the header it meets) is malformed.
		return nil, fmt.Errorf("%w: %s: tool_result in message %s of role %s", ErrEvent, e.Type, m.ID, m.Role)
	}
	if i < 0 {
		m.Turn = nextTurn(msgs, m.Role)
		return appendFor(r, msgs, m), nil
	}
	m.Turn = nextTurn(msgs[:i], m.Role) // the role may have changed
	out := cloneFor(r, msgs)
	out[i] = m
	return out, nil
}

// mergeHeader copies the fields the event sets onto an existing message.
func mergeHeader(m *Message, h *Message) {
	if h.Role != "" {
		m.Role = h.Role
	}
	if h.ParentID != "" {
		m.ParentID = h.ParentID
	}
	if h.Name != "" {
		m.Name = h.Name
	}
	if h.Model != "" {
		m.Model = h.Model
	}
	if !h.Usage.IsZero() {
		m.Usage = h.Usage
	}
	if !h.CreatedAt.IsZero() {
		m.CreatedAt = h.CreatedAt
	}
	m.Flags |= h.Flags
	if h.Source.Kind != "" {
		m.Source = h.Source
	}
}

func (r reducer) upsertBlock(blocks []Block, b *Block, index *int) []Block {
	i := -1
	if b.ID != "" {
		i = slices.IndexFunc(blocks, func(x Block) bool { return x.ID == b.ID })
	}
	if i < 0 && index != nil && *index < len(blocks) {
		i = *index
	}
	if i < 0 {
		return appendFor(r, blocks, *b)
	}
	out := cloneFor(r, blocks)
	out[i] = *b
	return out
}

// nextTurn numbers a message appended after msgs the way NumberTurns would.
func nextTurn(msgs []Message, role Role) int {
	last := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleAssistant {
			last = msgs[i].Turn
			break
		}
	}
	switch role {
	case RoleAssistant:
		return last + 1
	case RoleTool:
		return max(last, 1)
	default:
		return last + 1
	}
}

func (r reducer) appendDelta(msgs []Message, e *Event) []Message {
	mi := len(msgs) - 1
	if e.MessageID != "" {
		mi = lastIndex(msgs, e.MessageID)
	}
	if mi < 0 {
		return msgs
	}
	bi := slices.IndexFunc(msgs[mi].Blocks, func(b Block) bool { return b.ID == e.BlockID })
	if bi < 0 {
		return msgs
	}
	if t := msgs[mi].Blocks[bi].Type; t != BlockText && t != BlockThinking {
		return msgs
	}
	out := cloneFor(r, msgs)
	out[mi].Blocks = cloneFor(r, out[mi].Blocks)
	out[mi].Blocks[bi].Text += e.Delta
	return out
}

func (r reducer) reduceSubagent(s State, e *Event) State {
	path := subagentPath(s.Subagents, e.ToolUseID)
	if path == nil && e.AgentID != "" {
		path = subagentPath(s.Subagents, e.AgentID)
	}
	apply := func(sub *Subagent) {
		if sub.ToolUseID == "" {
			sub.ToolUseID = e.ToolUseID
		}
		if e.AgentID != "" {
			sub.AgentID = e.AgentID
		}
		if e.Description != "" {
			sub.Description = e.Description
		}
		switch {
		case e.Type == EventSubagentCompleted && e.Status != "":
			sub.Status = e.Status
		case e.Type == EventSubagentCompleted:
			sub.Status = SubagentCompleted
		case sub.Status == "":
			sub.Status = SubagentRunning
		}
	}
	if path != nil {
		s.Subagents = r.updateSubagent(s.Subagents, path, apply)
		return s
	}
	var sub Subagent
	apply(&sub)
	if isMain(e.ConversationID) {
		s.Subagents = appendFor(r, s.Subagents, sub)
		return s
	}
	parent := subagentPath(s.Subagents, e.ConversationID)
	if parent == nil {
		s.Subagents = appendFor(r, s.Subagents, Subagent{ToolUseID: e.ConversationID, Status: SubagentRunning})
		parent = []int{len(s.Subagents) - 1}
	}
	s.Subagents = r.updateSubagent(s.Subagents, parent, func(p *Subagent) {
		p.Subagents = appendFor(r, p.Subagents, sub)
	})
	return s
}

// finalize returns msgs with every pending block complete, copying only what changes.
func (r reducer) finalize(msgs []Message) []Message {
	var out []Message
	for i := range msgs {
		if !hasPending(msgs[i].Blocks) {
			continue
		}
		if out == nil {
			out = cloneFor(r, msgs)
		}
		out[i].Blocks = cloneFor(r, out[i].Blocks)
		for k := range out[i].Blocks {
			if out[i].Blocks[k].Status == BlockPending {
				out[i].Blocks[k].Status = BlockComplete
			}
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

func (r reducer) finalizeSubagents(subs []Subagent) []Subagent {
	var out []Subagent
	for i := range subs {
		msgs := r.finalize(subs[i].Messages)
		children := r.finalizeSubagents(subs[i].Subagents)
		if len(msgs) > 0 && &msgs[0] == firstOrNil(subs[i].Messages) && sameSubs(children, subs[i].Subagents) {
			continue
		}
		if len(msgs) == 0 && sameSubs(children, subs[i].Subagents) {
			continue
		}
		if out == nil {
			out = cloneFor(r, subs)
		}
		out[i].Messages, out[i].Subagents = msgs, children
	}
	if out == nil {
		return subs
	}
	return out
}

func firstOrNil(msgs []Message) *Message {
	if len(msgs) == 0 {
		return nil
	}
	return &msgs[0]
}

func sameSubs(a, b []Subagent) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func hasPending(blocks []Block) bool {
	for i := range blocks {
		if blocks[i].Status == BlockPending {
			return true
		}
	}
	return false
}
