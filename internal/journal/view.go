package journal

import (
	"context"
	"fmt"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
	"github.com/parley-dev/parley/pkg/history"
)

// View is one epoch of a history folded into a conversation.State, with the figures status
// reports. It is built once and then brought up to date by reading only the entries appended
// since (Refresh), so a reconcile never rereads or re-tokenizes the whole history.
// A View is not safe for concurrent use; Views serialises access.
type View struct {
	// Epoch and Sequence are the last entry folded in; Bytes the epoch's stored bytes.
	Epoch    uint64
	Sequence uint64
	Bytes    int64
	// State is the conversation as the records build it. Message.Seq is the store's sequence
	// of the record that created the message.
	State conversation.State
	// Initialized is true once the initialisation marker was read.
	Initialized bool
	// LastCompaction describes the compaction that wrote this epoch; nil for an epoch no
	// compaction wrote.
	LastCompaction *Compaction
	// LastReset describes the reset that wrote this epoch; nil for an epoch no reset wrote.
	LastReset *Reset
	// Turns counts the main thread's assistant messages (turn numbers run 1..Turns).
	Turns int
	// IdleSeq is the sequence of the latest session:idle event of the main thread (0: none):
	// the agent said it finished a burst and waits.
	IdleSeq uint64

	counter   tokens.Counter
	index     map[string]int // main-thread message id -> index in State.Messages
	baseCount int            // CountState of the state without messages
	msgCount  []int          // CountMessage of each main-thread message, aligned with State.Messages
	total     int
	// payload counts the bytes of the entries folded into this epoch. A store's index declares
	// the epoch's bytes (Bytes), but whoever writes the bucket, or answers for it, chooses
	// those: what was read is counted here instead.
	payload int64
	// tx holds the agent's transcript lines once the epoch has one (transcript_fold.go).
	tx *transcriptFold
}

// maxEpochPayload is the most record bytes a view folds from one epoch (a variable for tests).
var maxEpochPayload int64 = parleyv1alpha1.MaxHistoryBytes

// NewView returns the view of an empty epoch. counter may be nil (no token counts).
func NewView(sessionID string, counter tokens.Counter) *View {
	v := &View{State: conversation.NewState(sessionID), counter: counter, index: map[string]int{}}
	v.recountBase()
	return v
}

// heldBytes is what the view counts for in the cache's budget: the bytes it folded, or the
// epoch's declared bytes when more (entries of the epoch it has not read yet).
func (v *View) heldBytes() int64 { return max(v.Bytes, v.payload) }

// HistoryBytes is the size of the history the view holds, as the cache counts it (heldBytes):
// what an answer built from the whole of it costs to build is proportional to it.
func (v *View) HistoryBytes() int64 { return v.heldBytes() }

// Tokens is what the conversation costs in the model's context: the system prompt, the main
// thread's messages and the reply priming, as counter measures them.
func (v *View) Tokens() int { return v.total }

// Messages counts the main thread's messages.
func (v *View) Messages() int { return len(v.State.Messages) }

// Refresh reads the entries appended since the view was last brought up to date, in one read
// of the store when they fit a page: the page says where the head is. When the history moved to
// another epoch (a compaction), it rebuilds the view from that epoch.
func (v *View) Refresh(ctx context.Context, h history.History) error {
	page, err := h.Read(ctx, history.ReadOptions{From: v.Sequence + 1})
	if err != nil {
		return err
	}
	head := page.Head
	if head.Epoch != v.Epoch && v.Sequence > 0 || head.Sequence < v.Sequence {
		fresh := NewView(v.State.SessionID, v.counter)
		*v = *fresh
		// The page was read from the old view's sequence in the new epoch: read again.
		page = history.Page{Epoch: head.Epoch, Next: 1}
	}
	v.Epoch, v.Bytes = head.Epoch, head.Bytes
	for _, e := range page.Entries {
		if err := v.foldOne(e); err != nil {
			return err
		}
	}
	if page.Next != 0 {
		for e, err := range history.All(ctx, h, page.Epoch, page.Next) {
			if err != nil {
				return err
			}
			if err := v.foldOne(e); err != nil {
				return err
			}
		}
	}
	return v.settleTranscript()
}

// Fold applies entries this process has just appended, with the sequences the store assigned,
// so the next Refresh finds the view at the head and reads nothing more. Entries the view
// already holds are skipped; at the first gap Fold stops and leaves the rest to Refresh.
func (v *View) Fold(entries []history.Entry) error {
	for _, e := range entries {
		switch {
		case e.Seq <= v.Sequence:
			continue
		case e.Seq != v.Sequence+1:
			return nil
		}
		if err := v.Apply(e); err != nil {
			return err
		}
	}
	return nil
}

// Apply folds one entry into the view. Entries must come in sequence order.
func (v *View) Apply(e history.Entry) error {
	if err := v.foldOne(e); err != nil {
		return err
	}
	return v.settleTranscript()
}

// foldOne applies one entry, leaving the messages of transcript lines to settleTranscript, so
// a Refresh of many lines imports them once.
func (v *View) foldOne(e history.Entry) error {
	if e.Seq <= v.Sequence {
		return fmt.Errorf("journal: entry %d applied after %d", e.Seq, v.Sequence)
	}
	// A hostile store may declare a small epoch and serve one without end: folding it would
	// hold it all in memory. No store keeps more than MaxHistoryBytes, so past it the history
	// is corrupt.
	if v.payload += int64(len(e.Data)); v.payload > maxEpochPayload {
		return fmt.Errorf("%w: epoch %d holds more than %d bytes of records at sequence %d, more than any history keeps",
			history.ErrCorrupt, v.Epoch, maxEpochPayload, e.Seq)
	}
	env, err := decode(e)
	if err != nil {
		return err
	}
	v.Sequence = e.Seq
	if env.Kind == KindTranscript {
		if env.Transcript == nil {
			return fmt.Errorf("%w: sequence %d: transcript record without a line", ErrDecode, e.Seq)
		}
		v.addTranscriptLine(env.Transcript, e.Seq)
		return nil
	}
	if v.tx != nil {
		v.tx.after = append(v.tx.after, e)
	}
	return v.applyEnvelope(&env, e.Seq)
}

// applyEntry applies an entry again after a transcript rebuild (decoded afresh: applying
// events edits messages in place, so nothing of an earlier application is reused).
func (v *View) applyEntry(e history.Entry) error {
	env, err := decode(e)
	if err != nil {
		return err
	}
	return v.applyEnvelope(&env, e.Seq)
}

// applyEnvelope applies a decoded entry of any kind but KindTranscript.
func (v *View) applyEnvelope(env *envelope, seq uint64) error {
	s := &v.State
	switch env.Kind {
	case KindSystem:
		if env.Message == nil {
			return fmt.Errorf("%w: sequence %d: system record without a message", ErrDecode, seq)
		}
		sys := *env.Message
		s.System = &sys
		v.recountBase()
	case KindMessage:
		if env.Message == nil {
			return fmt.Errorf("%w: sequence %d: message record without a message", ErrDecode, seq)
		}
		v.appendMessage(*env.Message, seq)
	case KindEvent:
		if env.Event == nil {
			return fmt.Errorf("%w: sequence %d: event record without an event", ErrDecode, seq)
		}
		return v.applyEvent(env.Event, seq)
	case KindSubagent:
		if env.Subagent != nil {
			s.Subagents = append(s.Subagents, *env.Subagent)
		}
	case KindRecord:
		if env.Record != nil {
			s.Records = append(s.Records, *env.Record)
		}
	case KindAdapter:
		s.Adapters = append(s.Adapters, env.Adapters...)
	case KindSession:
		if env.CWD != "" {
			s.CWD = env.CWD
		}
		if env.Source != nil {
			s.Source = *env.Source
		}
		if len(env.Extra) > 0 {
			s.Extra = env.Extra
		}
		v.recountBase()
	case KindCompaction:
		v.LastCompaction = env.Compaction
	case KindReset:
		v.LastReset = env.Reset
	case KindInitialized:
		v.Initialized = true
	default:
		// A kind written by a newer manager: skipped, so an older one can still read the rest.
	}
	return nil
}

// appendMessage adds a whole message record. A message id the thread already holds (written
// once as a record and once by events) keeps its first version.
func (v *View) appendMessage(m conversation.Message, seq uint64) {
	if _, ok := v.index[m.ID]; ok {
		return
	}
	if m.Role == conversation.RoleUser && m.HasToolResult() {
		m.Role = conversation.RoleTool
	}
	m.Seq = int64(seq)
	m.Turn = v.turnOf(m.Role)
	if m.Role == conversation.RoleAssistant {
		v.Turns++
	}
	v.index[m.ID] = len(v.State.Messages)
	v.State.Messages = append(v.State.Messages, m)
	v.msgCount = append(v.msgCount, 0)
	v.recount(len(v.State.Messages) - 1)
}

// turnOf numbers a new message as conversation.NumberTurns would.
func (v *View) turnOf(role conversation.Role) int {
	switch role {
	case conversation.RoleAssistant:
		return v.Turns + 1
	case conversation.RoleTool:
		return max(v.Turns, 1)
	default:
		return v.Turns + 1
	}
}

func (v *View) applyEvent(ev *conversation.Event, seq uint64) error {
	s := &v.State
	before := len(s.Messages)
	main := ev.ConversationID == "" || ev.ConversationID == conversation.MainThread
	if main && ev.Message != nil && ev.Message.Seq != 0 {
		// The store numbers the main thread (below): a seq the client sent means nothing here,
		// and the reducer would refuse one that does not follow the view's last.
		e, m := *ev, *ev.Message
		m.Seq = 0
		e.Message = &m
		ev = &e
	}
	target := v.target(ev) // the existing message the event addresses, or -1
	wasAssistant := target >= 0 && s.Messages[target].Role == conversation.RoleAssistant
	if !applies(s, ev) {
		return nil
	}
	if !main || ev.Type == conversation.EventSubagentSpawned || ev.Type == conversation.EventSubagentCompleted {
		return nil
	}
	if len(s.Messages) > before {
		// The event created a message: number it from the store like a message record.
		for i := before; i < len(s.Messages); i++ {
			s.Messages[i].Seq = int64(seq)
			if s.Messages[i].Role == conversation.RoleAssistant {
				v.Turns++
				s.Messages[i].Turn = v.Turns
			} else {
				s.Messages[i].Turn = v.turnOf(s.Messages[i].Role)
			}
			v.index[s.Messages[i].ID] = i
			v.msgCount = append(v.msgCount, 0)
			v.recount(i)
		}
		return nil
	}
	switch ev.Type {
	case conversation.EventSessionIdle:
		v.IdleSeq = seq
		for i := range s.Messages {
			v.recount(i)
		}
	default:
		if target < 0 {
			return nil
		}
		if wasAssistant != (s.Messages[target].Role == conversation.RoleAssistant) {
			// A header moved the message to or from the assistant role: a turn starts or ends
			// there, and the turns of the messages after it move with it.
			conversation.NumberTurns(s.Messages)
			v.Turns = turnsIn(s.Messages)
		}
		v.recount(target)
	}
	return nil
}

// target is the index of the main-thread message an event addresses, -1 when there is none
// yet. A delta without a message id addresses the last message.
func (v *View) target(ev *conversation.Event) int {
	id := ev.MessageID
	if ev.Message != nil {
		id = ev.Message.ID
	}
	if id == "" {
		return len(v.State.Messages) - 1
	}
	if i, ok := v.index[id]; ok {
		return i
	}
	return -1
}

func (v *View) recount(i int) {
	if v.counter == nil {
		return
	}
	n := v.counter.CountMessage(&v.State.Messages[i])
	v.total += n - v.msgCount[i]
	v.msgCount[i] = n
}

func (v *View) recountBase() {
	if v.counter == nil {
		return
	}
	shell := v.State
	shell.Messages = nil
	n := v.counter.CountState(&shell)
	v.total += n - v.baseCount
	v.baseCount = n
}

// TokensOf counts a state cut from this view (Cut keeps a prefix of the messages): the
// system prompt and reply priming plus the kept messages, from the counts already made.
func (v *View) TokensOf(s *conversation.State) int {
	n := min(len(s.Messages), len(v.msgCount))
	total := v.baseCount
	for _, c := range v.msgCount[:n] {
		total += c
	}
	return total
}

// applies an event in place and reports whether it did. The Session API validated the
// event before storing it; one that no longer applies (e.g. a block of a thread folded by
// compaction) is skipped rather than failing the whole view.
func applies(s *conversation.State, ev *conversation.Event) bool {
	return s.Apply(*ev) == nil
}

// Message returns the main-thread message with that id, if the view holds one.
func (v *View) Message(id string) (*conversation.Message, bool) {
	i, ok := v.index[id]
	if !ok {
		return nil, false
	}
	return &v.State.Messages[i], true
}
