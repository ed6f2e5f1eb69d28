package journal

import (
	"slices"
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
	"github.com/parley-dev/parley/pkg/history"
)

// KindCompaction opens an epoch written by compaction and says how it was made, so the view
// of the new epoch knows its last compaction even when the manager died before recording it
// in status.
const KindCompaction Kind = "compaction"

// CompactionRecordID is the id of the compaction record (one per epoch).
const CompactionRecordID = "compaction"

// Compaction describes one compaction: what status.lastCompaction reports.
type Compaction struct {
	Time           time.Time `json:"time"`
	Strategy       string    `json:"strategy"`
	TokensBefore   int       `json:"tokensBefore"`
	TokensAfter    int       `json:"tokensAfter"`
	MessagesFolded int       `json:"messagesFolded"`
	// Checkpoint names the Checkpoint holding the history before compaction.
	Checkpoint string `json:"checkpoint,omitzero"`
	// FromEpoch and Through are the epoch compacted and its last sequence folded in; entries
	// appended after Through were carried into the new epoch as they were.
	FromEpoch uint64 `json:"fromEpoch"`
	Through   uint64 `json:"through"`
	// SummarizerUsage is what the summarizer's provider reported the summary cost (Summarize;
	// zero when it reported nothing). TokensAfter counts the summary with the conversation's
	// tokenizer instead, which may not be the summarizer model's.
	SummarizerUsage conversation.Usage `json:"summarizerUsage,omitzero"`
}

// CompactionRecord encodes the record that opens a compacted epoch.
func CompactionRecord(c *Compaction) (history.Record, error) {
	return encode(CompactionRecordID, &envelope{Kind: KindCompaction, Compaction: c})
}

// Snapshot is a copy of a view taken under its lock, for work done without it (a compaction
// that calls a model for a minute must not hold the view a reconcile needs).
type Snapshot struct {
	// State is the view's state; its message and block slices are the snapshot's own.
	State conversation.State
	// Epoch and Sequence are the last entry folded into State.
	Epoch, Sequence uint64
	// Tokens is the view's count of State.
	Tokens int
	// LastReset describes the reset that wrote the epoch; nil for an epoch no reset wrote.
	LastReset *Reset
	// Counter counts like the view's counter and answers for the snapshot's own messages
	// from the counts the view already made, so compacting 100k messages re-tokenizes none.
	Counter tokens.Counter
}

// Snapshot copies the view. It returns nil for a view built without a counter.
func (v *View) Snapshot() *Snapshot {
	if v.counter == nil {
		return nil
	}
	s := v.State
	s.Messages = make([]conversation.Message, len(v.State.Messages))
	known := make(map[*conversation.Block]int, len(s.Messages))
	for i := range v.State.Messages {
		m := v.State.Messages[i]
		m.Blocks = slices.Clone(m.Blocks)
		s.Messages[i] = m
		if len(m.Blocks) > 0 {
			known[&m.Blocks[0]] = v.msgCount[i]
		}
	}
	s.Subagents = slices.Clone(s.Subagents)
	s.Records = slices.Clone(s.Records)
	s.Adapters = slices.Clone(s.Adapters)
	var lastReset *Reset
	if v.LastReset != nil {
		r := *v.LastReset
		lastReset = &r
	}
	return &Snapshot{
		State: s, Epoch: v.Epoch, Sequence: v.Sequence, Tokens: v.total, LastReset: lastReset,
		Counter: knownCounts{Counter: v.counter, known: known},
	}
}

// knownCounts answers CountMessage for the snapshot's messages from the view's counts. A
// message is known by its blocks' backing array, which copies of the message share and an
// edit (a compaction clearing a tool result) replaces, so an edited message is counted afresh.
type knownCounts struct {
	tokens.Counter
	known map[*conversation.Block]int
}

func (k knownCounts) CountMessage(m *conversation.Message) int {
	if len(m.Blocks) > 0 {
		if n, ok := k.known[&m.Blocks[0]]; ok {
			return n
		}
	}
	return k.Counter.CountMessage(m)
}

// idCounts answers CountMessage from counts by message id while a view is seeded.
type idCounts struct {
	tokens.Counter
	counts map[string]int
}

func (c idCounts) CountMessage(m *conversation.Message) int {
	if n, ok := c.counts[m.ID]; ok {
		return n
	}
	return c.Counter.CountMessage(m)
}

// Seed puts in vs the view of an epoch that a compaction just wrote: records are the epoch's
// first entries (sequence 1 onwards, as NewEpoch stored them) and counts the token counts of
// their messages by id, already made. The next With then reads only the entries carried after
// them, instead of rebuilding the view and re-tokenizing every message kept. A view already
// past that epoch is left alone.
func (vs *Views) Seed(key, sessionID, tokenizer string, epoch uint64, records []history.Record, counts map[string]int) error {
	counter, err := vs.counter(tokenizer)
	if err != nil {
		return err
	}
	v := NewView(sessionID, idCounts{Counter: counter, counts: counts})
	v.Epoch = epoch
	for i, rec := range records {
		if err := v.Apply(history.Entry{Seq: uint64(i + 1), ID: rec.ID, Data: rec.Data}); err != nil {
			return err
		}
	}
	v.counter = counter
	e := vs.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.view != nil && e.tokenizer == tokenizer && e.view.State.SessionID == sessionID && e.view.Epoch >= epoch {
		return nil
	}
	e.view, e.tokenizer = v, tokenizer
	return nil
}

// Peek calls fn with the view of a history as the last With left it, without reading the
// store, and reports whether a view was held. fn must not keep the view past its return.
func (vs *Views) Peek(key string, fn func(*View)) bool {
	e := vs.locked(key)
	if e == nil {
		return false
	}
	defer e.mu.Unlock()
	fn(e.view)
	return true
}
