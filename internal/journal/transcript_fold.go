package journal

import (
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// transcriptFold is how a View holds an epoch whose agent mirrors its own transcript. The
// Claude transcript importer reads whole files (it merges the lines of one API message and
// picks the branch a rewind left), so the lines are kept and the messages they make are
// rebuilt from them when lines were added: the state before the first line (the prefix: the
// system prompt, a seed, a fork or a compaction's messages), then the messages imported from
// the lines, then whatever other entries came after the first line, applied again in order.
type transcriptFold struct {
	// prefix is the state as the epoch held it before its first transcript line; its
	// messages and blocks are its own.
	prefix conversation.State
	// threads are the lines by subpath, in order; order lists the subpaths as first seen.
	threads map[string]*transcriptThread
	order   []string
	// after are the entries of other kinds that came after the first transcript line.
	after []history.Entry
	// firstSeq maps a line uuid and an API message id to the sequence of the first line
	// that carried it: an imported message is numbered by its first line.
	firstSeq map[string]uint64
	lastSeq  uint64
	dirty    bool
}

// transcriptThread is one transcript as its file: the lines joined by newlines, grown as
// lines come, so a rebuild hands the importer the file without copying it.
type transcriptThread struct {
	data     []byte
	ends     []int // where each line ends in data
	modified time.Time
}

// lines returns the thread's lines (views of data, which only grows).
func (t *transcriptThread) lines() []jsontext.Value {
	out := make([]jsontext.Value, len(t.ends))
	start := 0
	for i, end := range t.ends {
		out[i] = jsontext.Value(t.data[start:end])
		start = end + 1
	}
	return out
}

// lineIDs reads the ids a message imported from a line can take.
type lineIDs struct {
	UUID    string `json:"uuid"`
	Message struct {
		ID string `json:"id"`
	} `json:"message"`
}

// addTranscriptLine folds one line in; the messages are rebuilt by settleTranscript.
func (v *View) addTranscriptLine(l *TranscriptLine, seq uint64) {
	if v.tx == nil {
		v.tx = &transcriptFold{
			prefix: cloneState(&v.State), threads: map[string]*transcriptThread{}, firstSeq: map[string]uint64{},
		}
	}
	tx := v.tx
	t, ok := tx.threads[l.Subpath]
	if !ok {
		t = &transcriptThread{}
		tx.threads[l.Subpath] = t
		tx.order = append(tx.order, l.Subpath)
	}
	t.data = append(t.data, l.Entry...)
	t.ends = append(t.ends, len(t.data))
	t.data = append(t.data, '\n')
	if l.At.After(t.modified) {
		t.modified = l.At
	}
	if l.Subpath == "" {
		var ids lineIDs
		if json.Unmarshal(l.Entry, &ids, codec) == nil {
			for _, id := range []string{ids.UUID, ids.Message.ID} {
				if _, seen := tx.firstSeq[id]; id != "" && !seen {
					tx.firstSeq[id] = seq
				}
			}
		}
	}
	tx.lastSeq, tx.dirty = seq, true
}

// settleTranscript rebuilds the messages from the prefix, the transcript lines and the
// entries after them, when lines were added since the last rebuild.
func (v *View) settleTranscript() error {
	tx := v.tx
	if tx == nil || !tx.dirty {
		return nil
	}
	tx.dirty = false
	s := cloneState(&tx.prefix)
	s.SessionID = v.State.SessionID
	base := len(s.Messages)
	imported := tx.importLines()
	for i := range imported.Messages {
		m := imported.Messages[i]
		m.Seq = int64(tx.seqOf(&m))
		s.Messages = append(s.Messages, m)
	}
	s.Subagents = append(s.Subagents, imported.Subagents...)
	for _, r := range imported.Records {
		if r.Thread == "" && r.AfterID == "" && base > 0 {
			// Before the transcript's first message is after the prefix's last one.
			r.AfterID = s.Messages[base-1].ID
		}
		s.Records = append(s.Records, r)
	}
	if s.CWD == "" {
		s.CWD = imported.CWD
	}
	v.State = s
	v.reindex()
	for _, e := range tx.after {
		if err := v.applyEntry(e); err != nil {
			return err
		}
	}
	if !slices.IsSortedFunc(v.State.Messages, bySeq) {
		// Messages appended through the API between transcript lines go where they came.
		slices.SortStableFunc(v.State.Messages, bySeq)
		v.reindex()
	}
	return nil
}

func bySeq(a, b conversation.Message) int { return int(a.Seq - b.Seq) }

// importLines reads the lines as the transcript files they mirror. Lines the importer
// cannot read as a session (it refuses nothing a SessionStore accepts today) are kept as
// raw records, so the state loses none of them.
func (tx *transcriptFold) importLines() conversation.State {
	var main []byte
	var subs []conversation.ClaudeSubagentFile
	for _, sub := range tx.order {
		if sub == "" {
			main = tx.threads[sub].data
			continue
		}
		subs = append(subs, conversation.ClaudeSubagentFile{AgentID: agentOfSubpath(sub), Data: tx.threads[sub].data})
	}
	s, err := conversation.ImportClaudeSession(main, subs...)
	if err == nil {
		return s
	}
	s = conversation.NewState("")
	for _, sub := range tx.order {
		thread := ""
		if sub != "" {
			thread = agentOfSubpath(sub)
		}
		for _, l := range tx.threads[sub].lines() {
			s.Records = append(s.Records, conversation.RawRecord{Thread: thread, Raw: l})
		}
	}
	return s
}

// seqOf numbers an imported message by the first line that carried its id.
func (tx *transcriptFold) seqOf(m *conversation.Message) uint64 {
	if seq, ok := tx.firstSeq[m.ID]; ok {
		return seq
	}
	return tx.lastSeq
}

// agentOfSubpath is the agent id of a subagent transcript: subagents/agent-<id> (possibly
// nested) gives <id>; any other subpath is its own thread name.
func agentOfSubpath(subpath string) string {
	last := subpath[strings.LastIndexByte(subpath, '/')+1:]
	if id, ok := strings.CutPrefix(last, "agent-"); ok && id != "" {
		return id
	}
	return subpath
}

// subpathOfAgent is the subpath the Claude export files a subagent's transcript under.
func subpathOfAgent(agentID string) string {
	return "subagents/agent-" + agentID
}

// reindex numbers turns, rebuilds the message index and recounts after the messages were
// replaced (the counter caches counts by message content, so unchanged messages cost a hash).
func (v *View) reindex() {
	msgs := v.State.Messages
	conversation.NumberTurns(msgs)
	v.Turns = turnsIn(msgs)
	v.index = make(map[string]int, len(msgs))
	for i := range msgs {
		v.index[msgs[i].ID] = i
	}
	v.msgCount = make([]int, len(msgs))
	v.total, v.baseCount = 0, 0
	v.recountBase()
	for i := range msgs {
		v.recount(i)
	}
}

// cloneState copies a state deeply enough that applying events to the copy in place leaves
// the original as it was: every slice an event can edit (messages, their blocks, subagents and
// theirs) is the copy's own.
func cloneState(s *conversation.State) conversation.State {
	c := *s
	c.Messages = cloneThread(s.Messages)
	c.Subagents = cloneSubagents(s.Subagents)
	c.Records = slices.Clone(s.Records)
	c.Adapters = slices.Clone(s.Adapters)
	if s.System != nil {
		sys := *s.System
		sys.Blocks = slices.Clone(sys.Blocks)
		c.System = &sys
	}
	return c
}

func cloneThread(msgs []conversation.Message) []conversation.Message {
	out := slices.Clone(msgs)
	for i := range out {
		out[i].Blocks = slices.Clone(out[i].Blocks)
	}
	return out
}

func cloneSubagents(subs []conversation.Subagent) []conversation.Subagent {
	out := slices.Clone(subs)
	for i := range out {
		out[i].Messages = cloneThread(out[i].Messages)
		out[i].Subagents = cloneSubagents(out[i].Subagents)
	}
	return out
}
