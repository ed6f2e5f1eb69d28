package journal

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
	"github.com/parley-dev/parley/pkg/history"
)

// A state written as records and folded back by a View is the same state: messages (ids,
// roles, blocks, text, turns), system prompt, subagents, raw records after the same
// messages, adapter states, working directory and unknown fields.
func TestStateRecordsRoundTrip(t *testing.T) {
	states := map[string]func(testing.TB) conversation.State{
		"claude code fixture": fixtureState,
		"hand-made":           func(testing.TB) conversation.State { return handState() },
		"empty":               func(testing.TB) conversation.State { return conversation.NewState("empty") },
	}
	for name, state := range states {
		t.Run(name, func(t *testing.T) {
			s := state(t)
			want := parts(t, &s)
			records := stateRecords(t, &s, "seed:")
			if again := parts(t, &s); fmt.Sprint(again) != fmt.Sprint(want) {
				t.Fatal("StateRecords changed the state it encoded")
			}
			h := newHistory(t)
			seqs := appendAll(t, h, records...)
			seqOf := map[string]uint64{}
			for i, r := range records {
				seqOf[r.ID] = seqs[i]
			}

			v := NewView("session", nil)
			if err := v.Refresh(t.Context(), h); err != nil {
				t.Fatal(err)
			}
			sameParts(t, &v.State, &s)
			if v.State.SessionID != "session" || v.Initialized {
				t.Errorf("session %q initialized %v, want the view's own id and no marker", v.State.SessionID, v.Initialized)
			}
			if v.Sequence != uint64(len(records)) || v.Messages() != len(s.Messages) {
				t.Errorf("sequence %d messages %d, want %d %d", v.Sequence, v.Messages(), len(records), len(s.Messages))
			}
			assistants := 0
			for _, m := range v.State.Messages {
				if want := seqOf[messageRecordID(m.ID)]; uint64(m.Seq) != want {
					t.Errorf("message %s has Seq %d, its record is at sequence %d", m.ID, m.Seq, want)
				}
				if m.Role == conversation.RoleAssistant {
					assistants++
				}
			}
			if v.Turns != assistants {
				t.Errorf("Turns %d, want %d", v.Turns, assistants)
			}
			if err := v.State.Validate(); err != nil {
				t.Errorf("folded state is invalid: %v", err)
			}

			// A retried import of the same records stores nothing new.
			appendAll(t, h, stateRecords(t, &s, "seed:")...)
			if head, err := h.Head(t.Context()); err != nil || head.Sequence != uint64(len(records)) {
				t.Errorf("after a retried import head %+v %v, want sequence %d", head, err, len(records))
			}
		})
	}
}

// Counts are kept incrementally: after every entry the view's figures are those of a view
// built from scratch over the same entries, and its tokens what the counter says of the
// whole folded state.
func TestViewTokensIncremental(t *testing.T) {
	fixture, hand := fixtureState(t), handState()
	histories := map[string][]history.Record{
		"claude code fixture": append(stateRecords(t, &fixture, "seed:"), mustRecord(t)(InitializedRecord())),
		"hand-made":           stateRecords(t, &hand, "fork:"),
		"events":              eventRecords(t),
	}
	for name, records := range histories {
		for _, tokenizer := range []string{tokens.Cl100kBase, tokens.Approximate} {
			t.Run(name+"/"+tokenizer, func(t *testing.T) {
				counter := newCounter(t, tokenizer)
				h := newHistory(t)
				appendAll(t, h, records...)
				entries := readAll(t, h)
				v := NewView("session", counter)
				for i, e := range entries {
					if err := v.Apply(e); err != nil {
						t.Fatalf("apply %d: %v", e.Seq, err)
					}
					fresh := fold(t, newCounter(t, tokenizer), entries[:i+1])
					if v.Tokens() != fresh.Tokens() || v.Turns != fresh.Turns || v.Messages() != fresh.Messages() {
						t.Fatalf("after %s: tokens %d turns %d messages %d, a fresh view says %d %d %d",
							e.ID, v.Tokens(), v.Turns, v.Messages(), fresh.Tokens(), fresh.Turns, fresh.Messages())
					}
					if want := counter.CountState(&v.State); v.Tokens() != want {
						t.Fatalf("after %s: tokens %d, CountState %d", e.ID, v.Tokens(), want)
					}
					if want := counter.CountState(&v.State); v.TokensOf(&v.State) != want {
						t.Fatalf("after %s: TokensOf the whole state %d, CountState %d", e.ID, v.TokensOf(&v.State), want)
					}
				}
				if v.Tokens() == 0 {
					t.Error("nothing counted")
				}
			})
		}
	}
}

func TestViewWithoutCounter(t *testing.T) {
	s := handState()
	h := newHistory(t)
	appendAll(t, h, stateRecords(t, &s, "")...)
	if v := fold(t, nil, readAll(t, h)); v.Tokens() != 0 || v.TokensOf(&v.State) != 0 || v.Messages() != len(s.Messages) {
		t.Errorf("without a counter: tokens %d messages %d", v.Tokens(), v.Messages())
	}
}

func mustRecord(t testing.TB) func(history.Record, error) history.Record {
	return func(r history.Record, err error) history.Record {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

func eventRecord(t testing.TB, id string, e conversation.Event) history.Record {
	t.Helper()
	return mustRecord(t)(EventRecord(id, &e))
}

func upsert(thread string, m conversation.Message, b *conversation.Block) conversation.Event {
	return conversation.Event{Type: conversation.EventBlockUpsert, ConversationID: thread, Message: &m, Block: b}
}

// eventRecords is a streamed session: records and reducer events as the Session API stores
// them, with every kind of event and a few that no longer apply.
func eventRecords(t testing.TB) []history.Record {
	must := mustRecord(t)
	pending := func(id, s string) *conversation.Block {
		return &conversation.Block{ID: id, Type: conversation.BlockText, Text: s, Status: conversation.BlockPending}
	}
	u1, a2 := msg("u1", conversation.RoleUser, text("read main.go")), msg("a2", conversation.RoleAssistant, text("another version"))
	return []history.Record{
		must(SystemRecord("Be brief.")),
		must(MessageRecord(&u1)),
		eventRecord(t, "e1", upsert("", conversation.Message{ID: "a1", Role: conversation.RoleAssistant}, pending("b1", "Let me"))),
		eventRecord(t, "e2", conversation.Event{Type: conversation.EventBlockDelta, MessageID: "a1", BlockID: "b1", Delta: " read it for you."}),
		eventRecord(t, "e3", upsert("", conversation.Message{ID: "a1"}, &conversation.Block{ID: "b2", Type: conversation.BlockToolUse, ToolUseID: "t1", ToolName: "Read", Input: jsontext.Value(`{"path":"main.go"}`)})),
		eventRecord(t, "e4", conversation.Event{Type: conversation.EventSubagentSpawned, ToolUseID: "t1", Description: "reader"}),
		eventRecord(t, "e5", upsert("t1", conversation.Message{ID: "s1", Role: conversation.RoleUser}, &conversation.Block{Type: conversation.BlockText, Text: "a subagent's long prompt"})),
		eventRecord(t, "e6", upsert("main", conversation.Message{ID: "r1", Role: conversation.RoleUser}, &conversation.Block{Type: conversation.BlockToolResult, ToolUseID: "t1", Text: "package main"})),
		eventRecord(t, "e7", upsert("", conversation.Message{ID: "a2", Role: conversation.RoleAssistant}, pending("c1", "It is a"))),
		eventRecord(t, "e8", conversation.Event{Type: conversation.EventBlockDelta, BlockID: "c1", Delta: " main package."}),
		eventRecord(t, "e9", conversation.Event{Type: conversation.EventSubagentCompleted, ToolUseID: "t1", Status: conversation.SubagentCompleted}),
		eventRecord(t, "e10", conversation.Event{Type: conversation.EventSessionIdle}),
		must(AdapterRecord("ad1", &conversation.ClaudeAgentSDKState{SessionID: "sdk-1"})),
		must(MessageRecord(&a2)), // the events wrote a2 first: their version stays
		// No longer applies (a tool result in an assistant message): skipped, not fatal.
		eventRecord(t, "e11", upsert("", conversation.Message{ID: "a2"}, &conversation.Block{Type: conversation.BlockToolResult, ToolUseID: "t9"})),
		{ID: "future", Data: []byte(`{"kind":"a-kind-of-a-newer-manager"}`)},
		must(InitializedRecord()),
	}
}

// Events fold like the reducer applies them, with the store's numbering.
func TestViewEvents(t *testing.T) {
	h := newHistory(t)
	seqs := appendAll(t, h, eventRecords(t)...)
	counter := newCounter(t, tokens.Cl100kBase)
	v := NewView("session", counter)
	tokensAfter := make([]int, 0, 8)
	for _, e := range readAll(t, h) {
		if err := v.Apply(e); err != nil {
			t.Fatalf("apply %d (%s): %v", e.Seq, e.ID, err)
		}
		tokensAfter = append(tokensAfter, v.Tokens())
	}
	s := &v.State
	type want struct {
		id   string
		role conversation.Role
		seq  uint64
		turn int
		text string
	}
	wants := []want{
		{"u1", conversation.RoleUser, seqs[1], 1, "read main.go"},
		{"a1", conversation.RoleAssistant, seqs[2], 1, "Let me read it for you."},
		{"r1", conversation.RoleTool, seqs[7], 1, ""},
		{"a2", conversation.RoleAssistant, seqs[8], 2, "It is a main package."},
	}
	if len(s.Messages) != len(wants) {
		t.Fatalf("%d messages, want %d: %+v", len(s.Messages), len(wants), s.Messages)
	}
	for i, w := range wants {
		m := s.Messages[i]
		if m.ID != w.id || m.Role != w.role || uint64(m.Seq) != w.seq || m.Turn != w.turn || m.Text() != w.text {
			t.Errorf("message %d: %s %s seq %d turn %d %q, want %+v", i, m.ID, m.Role, m.Seq, m.Turn, m.Text(), w)
		}
		for _, b := range m.Blocks {
			if b.Status == conversation.BlockPending {
				t.Errorf("message %s: block %s still pending after session:idle", m.ID, b.ID)
			}
		}
	}
	if len(s.Messages[1].Blocks) != 2 {
		t.Errorf("a1 has %d blocks, want text and tool_use", len(s.Messages[1].Blocks))
	}
	if v.Turns != 2 || !v.Initialized || s.System == nil || len(s.Adapters) != 1 {
		t.Errorf("turns %d initialized %v system %v adapters %d", v.Turns, v.Initialized, s.System, len(s.Adapters))
	}
	if len(s.Subagents) != 1 || len(s.Subagents[0].Messages) != 1 || s.Subagents[0].Status != conversation.SubagentCompleted {
		t.Errorf("subagents %+v, want t1 completed with its message", s.Subagents)
	}
	// The delta grew a1's text, the subagent's message cost the main context nothing.
	if tokensAfter[3] <= tokensAfter[2] {
		t.Errorf("tokens %d after the delta, %d before", tokensAfter[3], tokensAfter[2])
	}
	if tokensAfter[6] != tokensAfter[5] {
		t.Errorf("a subagent's message changed the main thread's tokens: %d -> %d", tokensAfter[5], tokensAfter[6])
	}
	if got := counter.CountState(s); v.Tokens() != got {
		t.Errorf("tokens %d, CountState %d", v.Tokens(), got)
	}
}

func TestViewApplyErrors(t *testing.T) {
	tests := map[string]struct {
		entries []history.Entry
		wantErr error // nil: any error
	}{
		"out of order": {entries: []history.Entry{
			{Seq: 2, ID: "a", Data: []byte(`{"kind":"initialized"}`)}, {Seq: 2, ID: "b", Data: []byte(`{"kind":"initialized"}`)},
		}},
		"not JSON":                     {entries: []history.Entry{{Seq: 1, ID: "x", Data: []byte(`{"kind":`)}}, wantErr: ErrDecode},
		"a message record, no message": {entries: []history.Entry{{Seq: 1, ID: "msg:x", Data: []byte(`{"kind":"message"}`)}}, wantErr: ErrDecode},
		"a system record, no message":  {entries: []history.Entry{{Seq: 1, ID: "system", Data: []byte(`{"kind":"system"}`)}}, wantErr: ErrDecode},
		"an event record, no event":    {entries: []history.Entry{{Seq: 1, ID: "evt:x", Data: []byte(`{"kind":"event"}`)}}, wantErr: ErrDecode},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := NewView("s", nil)
			var err error
			for _, e := range tc.entries {
				if err = v.Apply(e); err != nil {
					break
				}
			}
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// countingHistory counts what Refresh reads: round trips (Head and Read calls) and entries.
type countingHistory struct {
	history.History
	trips, entries int
	from           []uint64
}

func (c *countingHistory) Head(ctx context.Context) (history.Head, error) {
	c.trips++
	return c.History.Head(ctx)
}

func (c *countingHistory) Read(ctx context.Context, opts history.ReadOptions) (history.Page, error) {
	p, err := c.History.Read(ctx, opts)
	c.trips++
	c.entries += len(p.Entries)
	c.from = append(c.from, opts.From)
	return p, err
}

// Refresh reads only what was appended since, in one round trip, and rebuilds from the new
// epoch after a compaction replaced the old one.
func TestViewRefresh(t *testing.T) {
	must := mustRecord(t)
	message := func(id string, role conversation.Role, s string) history.Record {
		m := msg(id, role, text(s))
		return must(MessageRecord(&m))
	}
	h := &countingHistory{History: newHistory(t)}
	counter := newCounter(t, tokens.Cl100kBase)
	v := NewView("session", counter)
	refresh := func(wantEntries, wantTrips int) {
		t.Helper()
		h.trips, h.entries = 0, 0
		if err := v.Refresh(t.Context(), h); err != nil {
			t.Fatal(err)
		}
		if h.entries != wantEntries || h.trips != wantTrips {
			t.Errorf("refresh read %d entries in %d round trips, want %d in %d", h.entries, h.trips, wantEntries, wantTrips)
		}
		fresh := fold(t, counter, readAll(t, h.History))
		if v.Sequence != fresh.Sequence || v.Tokens() != fresh.Tokens() || v.Turns != fresh.Turns {
			t.Errorf("view seq %d tokens %d turns %d, a fresh one %d %d %d", v.Sequence, v.Tokens(), v.Turns, fresh.Sequence, fresh.Tokens(), fresh.Turns)
		}
		sameParts(t, &v.State, &fresh.State)
		head, err := h.Head(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if v.Epoch != head.Epoch || v.Bytes != head.Bytes {
			t.Errorf("view epoch %d bytes %d, head %+v", v.Epoch, v.Bytes, head)
		}
	}

	refresh(0, 1) // an empty history
	appendAll(t, h, must(SystemRecord("Be brief.")), message("u1", conversation.RoleUser, "hello"), message("a1", conversation.RoleAssistant, "hi"))
	refresh(3, 1)
	appendAll(t, h, message("u2", conversation.RoleUser, "and now?"), message("a2", conversation.RoleAssistant, "now this"))
	refresh(2, 1)
	if last := h.from[len(h.from)-1]; last != 4 {
		t.Errorf("second refresh read from %d, want 4", last)
	}
	refresh(0, 1) // nothing new: one read that finds nothing

	// A compaction: a new epoch holds a summary, and carries what was appended after it read.
	head, err := h.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, h, message("u3", conversation.RoleUser, "one more"))
	if _, err := h.NewEpoch(t.Context(), history.EpochRequest{Epoch: head.Epoch, Through: head.Sequence, Records: []history.Record{
		must(SystemRecord("Be brief.")), message("sum", conversation.RoleUser, "summary of the above"),
		message("a9", conversation.RoleAssistant, "ok"), message("a10", conversation.RoleAssistant, "still ok"),
		message("a11", conversation.RoleAssistant, "and ok"), message("a12", conversation.RoleAssistant, "more than before"),
	}}); err != nil {
		t.Fatal(err)
	}
	// The read from the view's position finds the new epoch (2 entries past it, discarded);
	// the epoch is then read whole (7).
	refresh(2+7, 2)
	if v.Epoch == head.Epoch || v.Messages() != 6 || v.State.Messages[0].ID != "sum" || v.State.Messages[5].ID != "u3" {
		t.Errorf("after the new epoch: epoch %d messages %d %v", v.Epoch, v.Messages(), v.State.Messages)
	}
}

// A header may change an existing message's role (the Event contract: its fields "when the
// message is new or they changed"); a message that becomes the assistant's opens a turn, and
// the messages after it move to the next one.
func TestViewRoleChange(t *testing.T) {
	assistant := conversation.Message{Role: conversation.RoleAssistant}
	header := func(id string, m conversation.Message) conversation.Message { m.ID = id; return m }
	tests := map[string]struct {
		events    []conversation.Event
		wantTurns int
		wantTurn  []int // per message
	}{
		"a message first streamed without a role": {
			events: []conversation.Event{
				upsert("", conversation.Message{ID: "a1"}, &conversation.Block{Type: conversation.BlockText, Text: "x"}),
				upsert("", header("a1", assistant), nil),
				upsert("", conversation.Message{ID: "u2", Role: conversation.RoleUser}, &conversation.Block{Type: conversation.BlockText, Text: "y"}),
			},
			wantTurns: 1, wantTurn: []int{1, 2},
		},
		"a message in the middle": {
			events: []conversation.Event{
				upsert("", conversation.Message{ID: "u1", Role: conversation.RoleUser}, &conversation.Block{Type: conversation.BlockText, Text: "q"}),
				upsert("", conversation.Message{ID: "x"}, &conversation.Block{Type: conversation.BlockText, Text: "x"}),
				upsert("", header("a2", assistant), &conversation.Block{Type: conversation.BlockText, Text: "a"}),
				upsert("", conversation.Message{ID: "u3", Role: conversation.RoleUser}, &conversation.Block{Type: conversation.BlockText, Text: "y"}),
				upsert("", header("x", assistant), nil),
			},
			wantTurns: 2, wantTurn: []int{1, 1, 2, 3},
		},
		"back to the user": {
			events: []conversation.Event{
				upsert("", header("a1", assistant), &conversation.Block{Type: conversation.BlockText, Text: "x"}),
				upsert("", conversation.Message{ID: "u2", Role: conversation.RoleUser}, &conversation.Block{Type: conversation.BlockText, Text: "y"}),
				upsert("", conversation.Message{ID: "a1", Role: conversation.RoleUser}, nil),
			},
			wantTurns: 0, wantTurn: []int{1, 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			records := make([]history.Record, 0, len(tc.events))
			for i, e := range tc.events {
				records = append(records, eventRecord(t, fmt.Sprint(i), e))
			}
			h := newHistory(t)
			appendAll(t, h, records...)
			counter := newCounter(t, tokens.Approximate)
			v := fold(t, counter, readAll(t, h))
			turns := make([]int, 0, len(v.State.Messages))
			for _, m := range v.State.Messages {
				turns = append(turns, m.Turn)
			}
			if v.Turns != tc.wantTurns || fmt.Sprint(turns) != fmt.Sprint(tc.wantTurn) {
				t.Errorf("Turns %d, message turns %v; want %d %v", v.Turns, turns, tc.wantTurns, tc.wantTurn)
			}
			if v.Tokens() != counter.CountState(&v.State) {
				t.Errorf("tokens %d, CountState %d", v.Tokens(), counter.CountState(&v.State))
			}
		})
	}
}

// Fold takes entries just appended: the view ends where a Refresh would, and the next Refresh
// reads nothing. Held entries are skipped; a gap leaves the rest to Refresh.
func TestViewFold(t *testing.T) {
	must := mustRecord(t)
	message := func(id string, role conversation.Role, s string) history.Record {
		m := msg(id, role, text(s))
		return must(MessageRecord(&m))
	}
	entries := func(records []history.Record, seqs []uint64) []history.Entry {
		out := make([]history.Entry, len(seqs))
		for i, seq := range seqs {
			out[i] = history.Entry{Seq: seq, ID: records[i].ID, Data: records[i].Data}
		}
		return out
	}
	counter := newCounter(t, tokens.Cl100kBase)
	h := &countingHistory{History: newHistory(t)}
	folded, read := NewView("session", counter), NewView("session", counter)
	if err := folded.Refresh(t.Context(), h); err != nil {
		t.Fatal(err)
	}

	first := []history.Record{message("u1", conversation.RoleUser, "hi"), message("a1", conversation.RoleAssistant, "hello")}
	firstEntries := entries(first, appendAll(t, h, first...))
	if err := folded.Fold(firstEntries); err != nil {
		t.Fatal(err)
	}
	// Folding again (a retried append answers the same sequences) changes nothing.
	if err := folded.Fold(firstEntries); err != nil {
		t.Fatal(err)
	}
	h.entries = 0
	if err := folded.Refresh(t.Context(), h); err != nil || h.entries != 0 {
		t.Fatalf("refresh after fold: err %v, %d entries read, want 0", err, h.entries)
	}
	if err := read.Refresh(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	if folded.Sequence != read.Sequence || folded.Messages() != read.Messages() || folded.Turns != read.Turns ||
		folded.Tokens() != read.Tokens() || folded.Bytes != read.Bytes {
		t.Errorf("folded view seq %d msgs %d turns %d tokens %d bytes %d; read view %d %d %d %d %d",
			folded.Sequence, folded.Messages(), folded.Turns, folded.Tokens(), folded.Bytes,
			read.Sequence, read.Messages(), read.Turns, read.Tokens(), read.Bytes)
	}

	// Another writer appended u2 in between: a2 is not folded past the gap; Refresh reads both.
	appendAll(t, h, message("u2", conversation.RoleUser, "more"))
	second := []history.Record{message("a2", conversation.RoleAssistant, "sure")}
	if err := folded.Fold(entries(second, appendAll(t, h, second...))); err != nil {
		t.Fatal(err)
	}
	if folded.Sequence != 2 {
		t.Errorf("folded past a gap to sequence %d", folded.Sequence)
	}
	h.entries = 0
	if err := folded.Refresh(t.Context(), h); err != nil || folded.Messages() != 4 || h.entries != 2 {
		t.Errorf("refresh after a gap: err %v, %d messages, %d entries read", err, folded.Messages(), h.entries)
	}
}

// TestViewNumbersMainThreadEventsItself: a main-thread event that creates a message with a
// seq of the client's own (here one the view has passed) is numbered by the store like a
// message record, not refused by the reducer and silently dropped.
func TestViewNumbersMainThreadEventsItself(t *testing.T) {
	h := newHistory(t)
	must := mustRecord(t)
	u1, u2 := msg("u1", conversation.RoleUser, text("one")), msg("u2", conversation.RoleUser, text("two"))
	seqs := appendAll(t, h, must(MessageRecord(&u1)), must(MessageRecord(&u2)),
		eventRecord(t, "e1", upsert("", conversation.Message{ID: "a1", Role: conversation.RoleAssistant, Seq: 1},
			&conversation.Block{ID: "b1", Type: conversation.BlockText, Text: "three"})))
	v := NewView("session", nil)
	for _, e := range readAll(t, h) {
		if err := v.Apply(e); err != nil {
			t.Fatalf("apply %d (%s): %v", e.Seq, e.ID, err)
		}
	}
	m, ok := v.Message("a1")
	if !ok {
		t.Fatalf("the event's message was dropped: %+v", v.State.Messages)
	}
	if uint64(m.Seq) != seqs[2] {
		t.Errorf("a1 has seq %d, want the store's %d", m.Seq, seqs[2])
	}
	if err := v.State.Validate(); err != nil {
		t.Error(err)
	}
}
