package plugin

import (
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
)

// importLimits bound one part of POST …/import.
type importLimits struct {
	// messages bounds the part's messages.
	messages int
	// items bounds what becomes a history record each, as the Session API counts it
	// (wire.ImportItems): messages, transcript records, subagent threads, adapter reports.
	items int
	// bytes is about the most JSON a part holds.
	bytes int
}

// importPartLimits keep a part under the Session API's bounds: 500 messages, wire.MaxImportItems
// items and 4 MiB per request.
var importPartLimits = importLimits{messages: importMaxBatch, items: wire.MaxImportItems, bytes: importMaxBytes}

// importParts cuts a state into parts for POST …/import, each within limits (an item larger
// than a part goes alone, and the server judges it), such that appending the parts' records
// in order gives the records of the whole (journal.StateRecords' order): the session fields
// and the system prompt, the records before any message, each message with the records that
// followed it, the subagent threads, the records of their threads, the adapter reports.
//
// A part's records are journaled after its own messages and subagent threads, so a message
// whose records are cut in two ends the part that holds the rest of them: no message or
// thread may come before those records in their part.
func importParts(s *conversation.State, limits importLimits) []conversation.State {
	inMain := make(map[string]int, len(s.Messages))
	for i := range s.Messages {
		inMain[s.Messages[i].ID] = i
	}
	// after[i] are the records that followed main message i; the rest go last.
	var before, rest []conversation.RawRecord
	after := make(map[int][]conversation.RawRecord)
	for _, r := range s.Records {
		i, ok := inMain[r.AfterID]
		switch {
		case r.AfterID == "":
			before = append(before, r)
		case ok:
			after[i] = append(after[i], r)
		default:
			rest = append(rest, r)
		}
	}
	c := &partCutter{limits: limits, schema: s.SchemaVersion, cur: conversation.State{
		SchemaVersion: s.SchemaVersion, SessionID: s.SessionID, CWD: s.CWD, System: s.System, Source: s.Source, Extra: s.Extra,
	}}
	c.addRecords(before)
	for i := range s.Messages {
		m := &s.Messages[i]
		size := jsonSize(m)
		group := size
		for j := range after[i] {
			group += recordSize(&after[i][j])
		}
		c.makeRoom(1, 1+len(after[i]), group)
		c.cur.Messages = append(c.cur.Messages, *m)
		c.count(1, size)
		if c.addRecords(after[i]) {
			c.cut()
		}
	}
	for i := range s.Subagents {
		size := jsonSize(&s.Subagents[i])
		c.makeRoom(0, 1, size)
		c.cur.Subagents = append(c.cur.Subagents, s.Subagents[i])
		c.count(0, size)
	}
	c.addRecords(groupedByAfterID(rest))
	for _, a := range s.Adapters {
		size := jsonSize(a)
		c.makeRoom(0, 1, size)
		c.cur.Adapters = append(c.cur.Adapters, a)
		c.count(0, size)
	}
	c.cut()
	return c.parts
}

// partCutter fills import parts item by item, in the order the whole journals them.
type partCutter struct {
	limits                 importLimits
	schema                 string
	parts                  []conversation.State
	cur                    conversation.State
	messages, items, bytes int
}

// fits reports whether the current part takes that many more messages, items and bytes; an
// empty part takes anything.
func (c *partCutter) fits(messages, items, bytes int) bool {
	return c.items == 0 ||
		c.messages+messages <= c.limits.messages && c.items+items <= c.limits.items && c.bytes+bytes <= c.limits.bytes
}

func (c *partCutter) makeRoom(messages, items, bytes int) {
	if !c.fits(messages, items, bytes) {
		c.cut()
	}
}

func (c *partCutter) count(messages, bytes int) {
	c.messages += messages
	c.items++
	c.bytes += bytes
}

// addRecords adds records in order, cutting as the limits say, and reports whether it cut.
func (c *partCutter) addRecords(records []conversation.RawRecord) (cut bool) {
	for j := range records {
		size := recordSize(&records[j])
		if !c.fits(0, 1, size) {
			c.cut()
			cut = true
		}
		c.cur.Records = append(c.cur.Records, records[j])
		c.count(0, size)
	}
	return cut
}

// cut ends the current part. An empty one is dropped, but for the first: it carries the
// session fields and the system prompt, and tells whether the manager has POST …/import.
func (c *partCutter) cut() {
	if c.items > 0 || len(c.parts) == 0 {
		c.parts = append(c.parts, c.cur)
	}
	c.cur = conversation.State{SchemaVersion: c.schema}
	c.messages, c.items, c.bytes = 0, 0, 0
}

// recordSize is about a record's JSON size in a part.
func recordSize(r *conversation.RawRecord) int {
	return len(r.Raw) + len(r.AfterID) + len(r.AfterLine) + len(r.Thread) + 48
}

// groupedByAfterID is records grouped by the message they followed, the groups in the order
// of their first record, as journal.StateRecords writes records whose message is in no part.
func groupedByAfterID(records []conversation.RawRecord) []conversation.RawRecord {
	var order []string
	groups := make(map[string][]conversation.RawRecord)
	for _, r := range records {
		if _, seen := groups[r.AfterID]; !seen {
			order = append(order, r.AfterID)
		}
		groups[r.AfterID] = append(groups[r.AfterID], r)
	}
	out := make([]conversation.RawRecord, 0, len(records))
	for _, id := range order {
		out = append(out, groups[id]...)
	}
	return out
}
