package journal

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/test/fixtures"
)

var received = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// fileLines splits a JSONL file into its lines.
func fileLines(data []byte) []jsontext.Value {
	var out []jsontext.Value
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			out = append(out, jsontext.Value(line))
		}
	}
	return out
}

func transcriptRecords(t testing.TB, subpath, batch string, lines ...jsontext.Value) []history.Record {
	t.Helper()
	recs, err := TranscriptRecords(subpath, batch, lines, received)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// sameJSON fails unless got holds the same JSON values as want, in order.
func sameJSON(t testing.TB, what string, got, want []jsontext.Value) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d lines, want %d", what, len(got), len(want))
	}
	for i := range want {
		if bytes.Equal(got[i], want[i]) {
			continue
		}
		var g, w any
		if err := json.Unmarshal(got[i], &g); err != nil {
			t.Fatalf("%s line %d: %v", what, i, err)
		}
		if err := json.Unmarshal(want[i], &w); err != nil {
			t.Fatal(err)
		}
		gb, _ := json.Marshal(g, json.Deterministic(true))
		wb, _ := json.Marshal(w, json.Deterministic(true))
		if !bytes.Equal(gb, wb) {
			t.Fatalf("%s line %d differs:\n got %s\nwant %s", what, i, got[i], want[i])
		}
	}
}

func TestTranscriptRecordsRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		subpath, batch, entry string
	}{
		"not an object":           {entry: `["user"]`},
		"no type":                 {entry: `{"uuid":"u1"}`},
		"type not a string":       {entry: `{"type":1}`},
		"uuid not a string":       {entry: `{"type":"user","uuid":7}`},
		"empty uuid":              {entry: `{"type":"user","uuid":""}`},
		"uuid too long":           {entry: `{"type":"user","uuid":"` + strings.Repeat("u", 129) + `"}`},
		"subpath climbs":          {subpath: "subagents/../../etc", entry: `{"type":"user"}`},
		"absolute subpath":        {subpath: "/subagents/agent-1", entry: `{"type":"user"}`},
		"empty segment":           {subpath: "subagents//agent-1", entry: `{"type":"user"}`},
		"backslash":               {subpath: `subagents\agent-1`, entry: `{"type":"user"}`},
		"control character":       {subpath: "subagents/agent-\n1", entry: `{"type":"user"}`},
		"subpath too long":        {subpath: strings.Repeat("s", MaxTranscriptSubpath+1), entry: `{"type":"user"}`},
		"no batch":                {batch: "-", entry: `{"type":"user"}`},
		"truncated JSON":          {entry: `{"type":"user"`},
		"a second value after it": {entry: `{"type":"user"} {}`},
		"not UTF-8":               {entry: "{\"type\":\"user\",\"uuid\":\"u\xb4\"}"},
		"not UTF-8 in a member":   {entry: "{\"type\":\"user\",\"x\xb4\":{\"k\":\"\xff\"}}"},
	} {
		t.Run(name, func(t *testing.T) {
			batch := tc.batch
			switch batch {
			case "":
				batch = "b1"
			case "-":
				batch = ""
			}
			_, err := TranscriptRecords(tc.subpath, batch, []jsontext.Value{jsontext.Value(tc.entry)}, received)
			if !errors.Is(err, ErrTranscriptEntry) {
				t.Fatalf("error %v, want ErrTranscriptEntry", err)
			}
		})
	}
}

// An entry's uuid is its idempotency key within its transcript; entries without one are
// keyed by batch and position.
func TestTranscriptRecordIDs(t *testing.T) {
	line := jsontext.Value(`{"type":"user","uuid":"u1"}`)
	keyless := jsontext.Value(`{"type":"custom-title","title":"x"}`)
	a := transcriptRecords(t, "", "batch-a", line, keyless)
	b := transcriptRecords(t, "", "batch-b", line, keyless)
	sub := transcriptRecords(t, "subagents/agent-1", "batch-a", line)
	if a[0].ID != b[0].ID {
		t.Errorf("the same uuid in two batches has ids %q and %q", a[0].ID, b[0].ID)
	}
	if a[1].ID == b[1].ID {
		t.Errorf("a keyless entry of two batches shares the id %q", a[1].ID)
	}
	if a[0].ID == sub[0].ID {
		t.Errorf("the same uuid in two transcripts shares the id %q", a[0].ID)
	}
	if again := transcriptRecords(t, "", "batch-a", line, keyless); again[1].ID != a[1].ID {
		t.Errorf("a retried batch gives the keyless entry id %q, then %q", a[1].ID, again[1].ID)
	}
}

// The fixture session, sent as a SessionStore would (batches, one of them twice, the
// subagent's lines between), comes back line for line, and the view's model is the model
// of the same files imported whole: the transcript is the history.
func TestTranscriptLinesAreTheHistory(t *testing.T) {
	mainLines := fileLines(fixtures.Read(t, fixtures.ClaudeMain))
	subLines := fileLines(fixtures.Read(t, fixtures.ClaudeSubagent))
	const subpath = "subagents/agent-a9b844f"
	batches := [][]history.Record{
		transcriptRecords(t, "", "b1", mainLines[:4]...),
		transcriptRecords(t, subpath, "b2", subLines[:2]...),
		transcriptRecords(t, "", "b3", mainLines[4:9]...),
		transcriptRecords(t, "", "b3", mainLines[4:9]...), // a retry: stored once
		transcriptRecords(t, subpath, "b4", subLines[2:]...),
		transcriptRecords(t, "", "b5", mainLines[9:]...),
	}
	for _, tokenizer := range []string{tokens.Cl100kBase, tokens.Approximate} {
		t.Run(tokenizer, func(t *testing.T) {
			h := newHistory(t)
			live := NewView("session", newCounter(t, tokenizer))
			for _, b := range batches {
				appendAll(t, h, b...)
				if err := live.Refresh(t.Context(), h); err != nil {
					t.Fatal(err)
				}
			}
			if head, _ := h.Head(t.Context()); head.Sequence != uint64(len(mainLines)+len(subLines)) {
				t.Fatalf("head %d, want one record per line (%d)", head.Sequence, len(mainLines)+len(subLines))
			}
			fresh := fold(t, newCounter(t, tokenizer), readAll(t, h))
			for name, v := range map[string]*View{"refreshed per batch": live, "folded at once": fresh} {
				got, ok, err := v.TranscriptLines("")
				if err != nil || !ok {
					t.Fatalf("%s: main transcript: %v %v", name, ok, err)
				}
				sameJSON(t, name+" main", got, mainLines)
				got, ok, err = v.TranscriptLines(subpath)
				if err != nil || !ok {
					t.Fatalf("%s: subagent transcript: %v %v", name, ok, err)
				}
				sameJSON(t, name+" subagent", got, subLines)
				if _, ok, _ := v.TranscriptLines("subagents/agent-none"); ok {
					t.Errorf("%s: a transcript never written exists", name)
				}
				infos := v.Transcripts()
				if len(infos) != 2 || infos[0].Subpath != "" || infos[1].Subpath != subpath || !infos[0].Modified.Equal(received) {
					t.Errorf("%s: transcripts %+v", name, infos)
				}
			}

			want := fixtureState(t)
			sameParts(t, &live.State, &want)
			if live.Tokens() != fresh.Tokens() || live.Turns != fresh.Turns || live.Tokens() != live.counter.CountState(&live.State) {
				t.Errorf("tokens %d turns %d; folded at once %d %d; CountState %d",
					live.Tokens(), live.Turns, fresh.Tokens(), fresh.Turns, live.counter.CountState(&live.State))
			}
			last := int64(0)
			for _, m := range live.State.Messages {
				if m.Seq <= last || m.Seq > int64(live.Sequence) {
					t.Errorf("message %s has Seq %d after %d (head %d)", m.ID, m.Seq, last, live.Sequence)
				}
				last = m.Seq
				if got, ok := live.Message(m.ID); !ok || got.ID != m.ID {
					t.Errorf("message %s not indexed", m.ID)
				}
			}
		})
	}
}

// What the epoch held before the agent's first line (a seed here) comes first, as the
// Claude export writes it; messages appended through the API between lines keep their
// place; a conversation the agent never mirrored exports whole.
func TestTranscriptAfterSeedAndMessages(t *testing.T) {
	seed := handState()
	seed.Subagents, seed.Records = nil, nil
	h := newHistory(t)
	appendAll(t, h, stateRecords(t, &seed, "seed:")...)
	v := NewView("11111111-2222-4333-8444-555555555555", newCounter(t, tokens.Cl100kBase))
	if err := v.Refresh(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	exported, ok, err := v.TranscriptLines("")
	if err != nil || !ok || len(exported) == 0 {
		t.Fatalf("a seeded conversation exports %d lines (%v %v)", len(exported), ok, err)
	}
	if infos := v.Transcripts(); len(infos) != 1 || infos[0].Subpath != "" || !infos[0].Modified.IsZero() {
		t.Errorf("transcripts of a seed %+v", infos)
	}

	agent := []jsontext.Value{
		jsontext.Value(`{"type":"user","uuid":"l1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"go on \ud83d"}}`),
		jsontext.Value("{\n  \"type\": \"mode\",\n  \"mode\": \"default\"\n}"),
	}
	reply := jsontext.Value(`{"type":"assistant","uuid":"l2","parentUuid":"l1","sessionId":"s","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"going"}]}}`)
	appendAll(t, h, transcriptRecords(t, "", "b1", agent...)...)
	appendAll(t, h, mustRecord(t)(MessageRecord(&conversation.Message{ID: "api-1", Role: conversation.RoleUser, Blocks: []conversation.Block{text("from the API")}})))
	appendAll(t, h, transcriptRecords(t, "", "b2", reply)...)
	if err := v.Refresh(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	got, _, err := v.TranscriptLines("")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "seed then lines", got, append(append(exported, agent...), reply))
	if !bytes.Equal(got[len(exported)], agent[0]) {
		t.Errorf("a line with half a surrogate pair came back as %s", got[len(exported)])
	}
	if string(got[len(exported)+1]) != `{"type":"mode","mode":"default"}` {
		t.Errorf("a pretty-printed line came back as %q, want it compact", got[len(exported)+1])
	}

	ids := make([]string, 0, len(v.State.Messages))
	for _, m := range v.State.Messages {
		ids = append(ids, m.ID)
	}
	want := []string{"u1", "a1", "r1", "a2", "u2", "a3", "l1", "api-1", "msg_1"}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("messages %v, want %v", ids, want)
	}
	if v.Turns != 4 || v.Tokens() != v.counter.CountState(&v.State) {
		t.Errorf("turns %d tokens %d (CountState %d)", v.Turns, v.Tokens(), v.counter.CountState(&v.State))
	}
	if fresh := fold(t, newCounter(t, tokens.Cl100kBase), readAll(t, h)); fresh.Tokens() != v.Tokens() {
		t.Errorf("tokens %d, folded at once %d", v.Tokens(), fresh.Tokens())
	}
}

// Events after the first transcript line are applied again on every rebuild, to a fresh
// copy: a delta is never applied twice, and the state before the lines is never edited.
func TestTranscriptRebuildAppliesEventsOnce(t *testing.T) {
	upsert := func(id, msgID string) history.Record {
		return eventRecord(t, id, conversation.Event{
			Type: conversation.EventBlockUpsert, Message: &conversation.Message{ID: msgID, Role: conversation.RoleAssistant},
			Block: &conversation.Block{ID: "b-" + msgID, Type: conversation.BlockText, Text: "a"},
		})
	}
	delta := func(id, msgID string) history.Record {
		return eventRecord(t, id, conversation.Event{Type: conversation.EventBlockDelta, MessageID: msgID, BlockID: "b-" + msgID, Delta: "b"})
	}
	h := newHistory(t)
	appendAll(t, h, upsert("e0", "before"))
	appendAll(t, h, transcriptRecords(t, "", "b1",
		jsontext.Value(`{"type":"user","uuid":"l1","message":{"role":"user","content":"hi"}}`))...)
	appendAll(t, h, upsert("e1", "after"), delta("e2", "after"), delta("e3", "before"))
	v := NewView("session", nil)
	for i := range 3 {
		appendAll(t, h, transcriptRecords(t, "", fmt.Sprint("batch-", i), jsontext.Value(`{"type":"last-prompt"}`))...)
		if err := v.Refresh(t.Context(), h); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"before", "after"} {
		if m, ok := v.Message(id); !ok || len(m.Blocks) != 1 || m.Blocks[0].Text != "ab" {
			t.Errorf("message %s: %+v", id, m)
		}
	}
	if p := v.tx.prefix.Messages; len(p) != 1 || p[0].Blocks[0].Text != "a" {
		t.Errorf("the state before the lines was edited: %+v", p)
	}
}
