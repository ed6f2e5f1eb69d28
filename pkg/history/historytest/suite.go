package historytest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// Run runs the whole conformance suite.
func Run(t *testing.T, h Harness) {
	t.Run("ObjectPrimitives", func(t *testing.T) { testObjectPrimitives(t, h) })
	t.Run("Ordering", func(t *testing.T) { testOrdering(t, h) })
	t.Run("Paging", func(t *testing.T) { testPaging(t, h) })
	t.Run("ArbitraryBytes", func(t *testing.T) { testArbitraryBytes(t, h) })
	t.Run("CallerBufferReuse", func(t *testing.T) { testCallerBufferReuse(t, h) })
	t.Run("IdempotentRetries", func(t *testing.T) { testIdempotent(t, h) })
	t.Run("DuplicateIDsInOneCommit", func(t *testing.T) { testDuplicateInOneCommit(t, h) })
	t.Run("AppendWith", func(t *testing.T) { testAppendWith(t, h) })
	t.Run("ReopenFromAnotherStore", func(t *testing.T) { testReopen(t, h) })
	t.Run("OpenMissing", func(t *testing.T) { testOpenMissing(t, h) })
	t.Run("Release", func(t *testing.T) { testRelease(t, h) })
	t.Run("ConcurrentGoroutines", func(t *testing.T) { testConcurrentGoroutines(t, h) })
	t.Run("ConcurrentProcesses", func(t *testing.T) { testConcurrentProcesses(t, h) })
	t.Run("KillBetweenSegmentAndIndex", func(t *testing.T) { testKillAndReopen(t, h) })
	t.Run("EpochSwap", func(t *testing.T) { testEpochSwap(t, h) })
	t.Run("EpochSwapUnderConcurrentAppends", func(t *testing.T) { testEpochSwapConcurrent(t, h) })
	t.Run("EpochSwapWithNothingUnsealed", func(t *testing.T) { testEpochSwapWithNothingUnsealed(t, h) })
	t.Run("Checkpoints", func(t *testing.T) { testCheckpoints(t, h) })
	t.Run("CorruptSegment", func(t *testing.T) { testCorruptSegment(t, h) })
	t.Run("CorruptIndex", func(t *testing.T) { testCorruptIndex(t, h) })
	t.Run("HostileSegment", func(t *testing.T) { testHostileSegment(t, h) })
	t.Run("LargeRecords", func(t *testing.T) { testLargeRecords(t, h) })
	t.Run("MaxBytes", func(t *testing.T) { testMaxBytes(t, h) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, h) })
	t.Run("Retention", func(t *testing.T) { testRetention(t, h) })
	t.Run("RetainUnderConcurrentAppends", func(t *testing.T) { testRetainUnderConcurrentAppends(t, h) })
	t.Run("CanceledContext", func(t *testing.T) { testCanceled(t, h) })
}

func open(t *testing.T, s history.Store, name string) history.History {
	t.Helper()
	h, err := s.Open(context.Background(), name, history.OpenOptions{Create: true})
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	return h
}

func testOrdering(t *testing.T, hn Harness) {
	h := open(t, newStore(t, hn), conversationName(t))
	acks := map[string]uint64{}
	// Single appends first (more than the tail holds, so seals happen), then batches.
	for i := range 70 {
		recs := records("m", i, 1)
		acks[recs[0].ID] = mustAppend(t, h, recs)[0]
	}
	for b := range 3 {
		recs := records("m", 70+b*10, 10)
		for i, s := range mustAppend(t, h, recs) {
			acks[recs[i].ID] = s
		}
	}
	entries := readAll(t, h, 0)
	if len(entries) != 100 {
		t.Fatalf("read %d entries, want 100", len(entries))
	}
	checkLog(t, entries, acks)
	for i, e := range entries {
		if want := fmt.Sprintf("m-%d", i); e.ID != want {
			t.Fatalf("entry %d is %s, want %s: appends must keep their order", i, e.ID, want)
		}
	}
	head, err := h.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if head.Sequence != 100 || head.Epoch != 1 || head.Bytes != sumBytes(entries) {
		t.Fatalf("head %+v, want sequence 100, epoch 1, %d bytes", head, sumBytes(entries))
	}
}

func sumBytes(entries []history.Entry) int64 {
	var n int64
	for _, e := range entries {
		n += int64(len(e.Data))
	}
	return n
}

func testPaging(t *testing.T, hn Harness) {
	h := open(t, newStore(t, hn), conversationName(t))
	mustAppend(t, h, records("p", 0, 250))
	ctx := context.Background()
	var got []history.Entry
	opts := history.ReadOptions{From: 1, Limit: 100}
	pages := 0
	for {
		page, err := h.Read(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Entries) > 100 {
			t.Fatalf("page of %d entries with limit 100", len(page.Entries))
		}
		got = append(got, page.Entries...)
		if page.Next == 0 {
			break
		}
		opts.From = page.Next
	}
	if pages != 3 || len(got) != 250 {
		t.Fatalf("%d pages, %d entries; want 3 pages, 250 entries", pages, len(got))
	}
	checkLog(t, got, nil)
	page, err := h.Read(ctx, history.ReadOptions{From: 240})
	if err != nil || len(page.Entries) != 11 || page.Entries[0].Seq != 240 || page.Next != 0 {
		t.Fatalf("read from 240: %d entries, next %d, err %v", len(page.Entries), page.Next, err)
	}
	head, herr := h.Head(ctx)
	if herr != nil || page.Head != head || head.Sequence != 250 {
		t.Fatalf("a page carries the head %+v; Head reads %+v (%v); want sequence 250", page.Head, head, herr)
	}
	page, err = h.Read(ctx, history.ReadOptions{From: 251})
	if err != nil || len(page.Entries) != 0 || page.Head != head {
		t.Fatalf("read past the head: %d entries, head %+v, err %v; want none at %+v", len(page.Entries), page.Head, err, head)
	}
}

func testIdempotent(t *testing.T, hn Harness) {
	name := conversationName(t)
	h := open(t, newStore(t, hn), name)
	first := mustAppend(t, h, records("i", 0, 5))
	// A retry of the same batch, a retry mixed with new records, and an id
	// repeated inside one batch.
	again := mustAppend(t, h, records("i", 0, 5))
	mixed := mustAppend(t, h, records("i", 3, 4))
	dup := mustAppend(t, h, append(records("i", 7, 1), records("i", 7, 1)...))
	for i := range first {
		if again[i] != first[i] {
			t.Fatalf("retry of i-%d got sequence %d, first %d", i, again[i], first[i])
		}
	}
	if mixed[0] != 4 || mixed[1] != 5 || mixed[2] != 6 || mixed[3] != 7 {
		t.Fatalf("mixed retry got %v, want [4 5 6 7]", mixed)
	}
	if dup[0] != 8 || dup[1] != 8 {
		t.Fatalf("id repeated in a batch got %v, want [8 8]", dup)
	}
	entries := readAll(t, h, 0)
	if len(entries) != 8 {
		t.Fatalf("%d entries stored, want 8", len(entries))
	}
	checkLog(t, entries, nil)
	// A second store (another process) knows the ids too.
	h2 := open(t, newStore(t, hn), name)
	if seqs := mustAppend(t, h2, records("i", 2, 1)); seqs[0] != 3 {
		t.Fatalf("retry through another store got %d, want 3", seqs[0])
	}
}

func testReopen(t *testing.T, hn Harness) {
	name := conversationName(t)
	h := open(t, newStore(t, hn), name)
	acks := map[string]uint64{}
	for i := range 40 {
		recs := records("r", i, 1)
		acks[recs[0].ID] = mustAppend(t, h, recs)[0]
	}
	h2 := open(t, newStore(t, hn), name)
	checkLog(t, readAll(t, h2, 0), acks)
	// Both keep appending; neither overwrites the other.
	for i := range 10 {
		for j, hh := range []history.History{h, h2} {
			recs := records("r", 40+2*i+j, 1)
			acks[recs[0].ID] = mustAppend(t, hh, recs)[0]
		}
	}
	entries := readAll(t, h, 0)
	if len(entries) != 60 {
		t.Fatalf("%d entries, want 60", len(entries))
	}
	checkLog(t, entries, acks)
}

func testOpenMissing(t *testing.T, hn Harness) {
	s := newStore(t, hn)
	_, err := s.Open(context.Background(), conversationName(t), history.OpenOptions{})
	if !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("open of a missing history without Create: %v, want ErrNotFound", err)
	}
}

func testRelease(t *testing.T, hn Harness) {
	s := newStore(t, hn)
	name := conversationName(t)
	h := open(t, s, name)
	first := mustAppend(t, h, records("rel", 0, 3))
	s.Release(name)
	if _, err := h.Append(context.Background(), records("rel", 3, 1)); !errors.Is(err, history.ErrClosed) {
		t.Fatalf("append on a released handle: %v, want ErrClosed", err)
	}
	h2 := open(t, s, name)
	if h2 == h {
		t.Fatal("Open after Release returned the released handle")
	}
	again := mustAppend(t, h2, records("rel", 0, 4))
	for i, seq := range first {
		if again[i] != seq {
			t.Fatalf("rel-%d got sequence %d after release, %d before", i, again[i], seq)
		}
	}
	if again[3] != 4 {
		t.Fatalf("new record got sequence %d, want 4", again[3])
	}
}
