package journal

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/compact"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/memory"
)

func compactionMessage(t *testing.T, i int) history.Record {
	t.Helper()
	role := conversation.RoleUser
	if i%2 == 1 {
		role = conversation.RoleAssistant
	}
	rec, err := MessageRecord(&conversation.Message{ID: fmt.Sprintf("m%03d", i), Role: role, Blocks: []conversation.Block{{
		Type: conversation.BlockText, Text: fmt.Sprintf("message %d %s", i, strings.Repeat("words of a conversation ", 4)),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestSeedMatchesARebuiltView compacts an epoch the way the runner does (snapshot, strategy,
// new epoch opened by a compaction record, an append carried after Through) and checks that
// the seeded view, brought up to date, equals a view rebuilt from the store: same messages,
// turns, tokens and last compaction, so the counts reused from the old epoch are right.
func TestSeedMatchesARebuiltView(t *testing.T) {
	ctx := context.Background()
	h, err := memory.New(memory.Options{}).Open(ctx, "ns/s", history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	sys, _ := SystemRecord("be brief")
	records := make([]history.Record, 0, 42)
	records = append(records, sys)
	for i := range 40 {
		records = append(records, compactionMessage(t, i))
	}
	marker, _ := InitializedRecord()
	if _, err := AppendAll(ctx, h, append(records, marker)); err != nil {
		t.Fatal(err)
	}
	const tok = "cl100k_base"
	vs := &Views{}
	var snap *Snapshot
	if err := vs.With(ctx, "k", "s", tok, h, func(v *View) error { snap = v.Snapshot(); return nil }); err != nil {
		t.Fatal(err)
	}
	if snap.Counter.CountState(&snap.State) != snap.Tokens {
		t.Fatalf("snapshot counts %d tokens, the view %d", snap.Counter.CountState(&snap.State), snap.Tokens)
	}
	out, rec, err := compact.SlidingWindow(&snap.State, compact.Policy{Budget: snap.Tokens / 3, KeepRecentMessages: 4, Counter: snap.Counter})
	if err != nil || rec.MessagesFolded == 0 {
		t.Fatalf("SlidingWindow: %v, %+v", err, rec)
	}
	if _, err := h.Append(ctx, []history.Record{compactionMessage(t, 40)}); err != nil { // lands meanwhile
		t.Fatal(err)
	}
	first, _ := CompactionRecord(&Compaction{
		Time: time.Unix(1, 0).UTC(), Strategy: string(rec.Strategy), TokensBefore: rec.TokensBefore,
		TokensAfter: rec.TokensAfter, MessagesFolded: rec.MessagesFolded, FromEpoch: snap.Epoch, Through: snap.Sequence,
	})
	state, err := StateRecords(out, "e2:")
	if err != nil {
		t.Fatal(err)
	}
	epochRecords := append(append([]history.Record{first}, state...), marker)
	head, err := h.NewEpoch(ctx, history.EpochRequest{Epoch: snap.Epoch, Through: snap.Sequence, Records: epochRecords})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i := range out.Messages {
		counts[out.Messages[i].ID] = snap.Counter.CountMessage(&out.Messages[i])
	}
	if err := vs.Seed("k", "s", tok, head.Epoch, epochRecords, counts); err != nil {
		t.Fatal(err)
	}

	type figures struct {
		epoch, seq             uint64
		messages, turns, total int
		last                   string
		init                   bool
	}
	read := func(vs *Views) figures {
		var f figures
		if err := vs.With(ctx, "k", "s", tok, h, func(v *View) error {
			f = figures{v.Epoch, v.Sequence, v.Messages(), v.Turns, v.Tokens(), "", v.Initialized}
			if v.LastCompaction != nil {
				f.last = fmt.Sprintf("%+v", *v.LastCompaction)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return f
	}
	seeded, rebuilt := read(vs), read(&Views{})
	if seeded != rebuilt {
		t.Fatalf("seeded view %+v, rebuilt %+v", seeded, rebuilt)
	}
	if seeded.epoch != snap.Epoch+1 || seeded.last == "" || !seeded.init {
		t.Fatalf("new epoch view %+v", seeded)
	}
	if want := len(out.Messages) + 1; seeded.messages != want {
		t.Fatalf("%d messages, want %d (the compacted ones and the carried append)", seeded.messages, want)
	}
}
