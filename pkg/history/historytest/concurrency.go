package historytest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

// testConcurrentGoroutines: two stores (as two processes would) with eight
// goroutines each append at once; sequences stay gap-free and unique.
func testConcurrentGoroutines(t *testing.T, hn Harness) {
	name := conversationName(t)
	handles := []history.History{open(t, newStore(t, hn), name), open(t, newStore(t, hn), name)}
	const perWorker, workers = 20, 8
	var mu sync.Mutex
	acks := map[string]uint64{}
	var wg sync.WaitGroup
	errs := make(chan error, len(handles)*workers)
	for s, h := range handles {
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					id := fmt.Sprintf("g%d-%d-%d", s, w, i)
					seqs, err := h.Append(context.Background(), []history.Record{{ID: id, Data: payload(id)}})
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					acks[id] = seqs[0]
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("append: %v", err)
	}
	entries := readAll(t, handles[0], 0)
	if want := len(handles) * workers * perWorker; len(entries) != want {
		t.Fatalf("%d entries, want %d", len(entries), want)
	}
	checkLog(t, entries, acks)
}

// testConcurrentProcesses: three child processes and this one append to
// the same history at once.
func testConcurrentProcesses(t *testing.T, hn Harness) {
	if hn.ChildEnv == nil {
		t.Skip("this backend lives inside one process; the real backends run this test")
	}
	name := conversationName(t)
	h := open(t, newStore(t, hn), name)
	const perChild = 60
	children := make([]*child, 3)
	for i := range children {
		children[i] = startChild(t, hn, name, fmt.Sprintf("p%d", i), perChild, 4, 0)
	}
	acks := map[string]uint64{}
	for i := range 30 {
		recs := records("parent", i, 1)
		acks[recs[0].ID] = mustAppend(t, h, recs)[0]
	}
	for _, c := range children {
		for id, seq := range c.wait(t, false) {
			acks[id] = seq
		}
	}
	if want := 3*perChild + 30; len(acks) != want {
		t.Fatalf("%d acknowledgements, want %d", len(acks), want)
	}
	entries := readAll(t, h, 0)
	if len(entries) != len(acks) {
		t.Fatalf("%d entries stored, %d acknowledged", len(entries), len(acks))
	}
	checkLog(t, entries, acks)
}

// testKillAndReopen: a writer dies by SIGKILL after writing a tail object
// and before moving the index. Nothing it acknowledged is lost or doubled,
// the orphan is ignored by readers and writers and removed by Retain.
//
// The record in flight is a big one: small appends go into the index itself
// and write nothing before it; a big one is written as a tail object first
// (together with the entries the index carried), which the crash orphans.
func testKillAndReopen(t *testing.T, hn Harness) {
	if hn.ChildEnv == nil {
		t.Skip("this backend lives inside one process; the real backends run this test")
	}
	name := conversationName(t)
	s := newStore(t, hn)
	h := open(t, s, name)
	const crashAt = 41 // past a seal (32 pieces), so sealed and unsealed data both exist
	c := startChild(t, hn, name, "k", 100, 1, crashAt, envBigAt+"="+strconv.Itoa(crashAt-1))
	acks := c.wait(t, true)
	if len(acks) != crashAt-1 {
		t.Fatalf("child acknowledged %d records before dying, want %d", len(acks), crashAt-1)
	}
	orphans := tailObjectsBeyond(t, s, name, h)
	if len(orphans) == 0 {
		t.Fatal("no orphan tail object found: the failpoint did not fire between segment and index")
	}

	// A new writer (this process) continues; the orphan's sequence is reused.
	entries := readAll(t, h, 0)
	if len(entries) != len(acks) {
		t.Fatalf("%d entries after the crash, %d acknowledged", len(entries), len(acks))
	}
	checkLog(t, entries, acks)
	// The record in flight when the child died was never acknowledged; a
	// client would retry it, and it must be stored once.
	inFlightID := bigID(fmt.Sprintf("k-%d", crashAt-1))
	inFlight := []history.Record{{ID: inFlightID, Data: payload(inFlightID)}}
	seq := mustAppend(t, h, inFlight)[0]
	if seq != uint64(crashAt) {
		t.Fatalf("retried record got sequence %d, want %d", seq, crashAt)
	}
	acks[inFlight[0].ID] = seq
	mustAppend(t, h, inFlight)
	entries = readAll(t, h, 0)
	checkLog(t, entries, acks)
	if len(entries) != crashAt {
		t.Fatalf("%d entries, want %d", len(entries), crashAt)
	}

	if err := h.Retain(context.Background(), history.Retention{}); err != nil {
		t.Fatal(err)
	}
	raw := rawObjects(t, s, name)
	for _, key := range orphans {
		if _, _, err := raw.Get(context.Background(), key); err == nil {
			t.Fatalf("orphan %s survived Retain", key)
		}
	}
	checkLog(t, readAll(t, h, 0), acks)
}

// testDuplicateInOneCommit: a retry racing its own original. Appends that
// repeat one id queue behind a commit held in flight, so they land in the
// same group commit; the id is stored once and every caller gets its
// sequence.
func testDuplicateInOneCommit(t *testing.T, hn Harness) {
	h := open(t, newStore(t, hn), conversationName(t))
	mustAppend(t, h, records("c", 0, 1))

	var mu sync.Mutex
	holding := false
	held, release := make(chan struct{}), make(chan struct{})
	queued := make(chan struct{}, 8)
	engine.Failpoint = func(name string) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case name == "queued" && holding:
			queued <- struct{}{}
		case name == "tail-written" && !holding:
			holding = true
			close(held)
			mu.Unlock()
			<-release // only this commit's goroutine waits here
			mu.Lock()
		}
	}
	t.Cleanup(func() { engine.Failpoint = nil })

	dup := records("dup", 0, 1)[0]
	batches := [][]history.Record{
		records("c", 1, 1), // the commit held in flight
		{records("x", 0, 1)[0], dup},
		{dup},
		{dup, records("x", 1, 1)[0]},
	}
	results := make([][]uint64, len(batches))
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	appendBatch := func(i int) {
		wg.Go(func() { results[i], errs[i] = h.Append(context.Background(), batches[i]) })
	}
	appendBatch(0)
	<-held
	for i := 1; i < len(batches); i++ {
		appendBatch(i)
	}
	for range len(batches) - 1 {
		<-queued
	}
	close(release) // the three queued requests now go into one commit
	wg.Wait()

	acks := map[string]uint64{}
	for i, b := range batches {
		if errs[i] != nil {
			t.Fatalf("append %d: %v", i, errs[i])
		}
		if len(results[i]) != len(b) {
			t.Fatalf("append %d returned %d sequences for %d records", i, len(results[i]), len(b))
		}
		for j, rec := range b {
			if prev, ok := acks[rec.ID]; ok && prev != results[i][j] {
				t.Fatalf("%s acknowledged at sequences %d and %d", rec.ID, prev, results[i][j])
			}
			acks[rec.ID] = results[i][j]
		}
	}
	entries := readAll(t, h, 0)
	checkLog(t, entries, acks)
	if len(entries) != 5 {
		t.Fatalf("%d entries stored, want 5 (c-0, c-1, x-0, x-1, dup-0 once)", len(entries))
	}
}
