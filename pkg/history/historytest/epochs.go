package historytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/history"
)

func testEpochSwap(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	h := open(t, newStore(t, hn), name)
	mustAppend(t, h, records("old", 0, 20))
	summary := records("summary", 0, 1)
	head, err := h.NewEpoch(ctx, history.EpochRequest{Epoch: 1, Through: 15, Records: summary})
	if err != nil {
		t.Fatal(err)
	}
	if head.Epoch != 2 || head.Sequence != 6 {
		t.Fatalf("new epoch head %+v, want epoch 2 with 6 entries (summary + 5 carried)", head)
	}
	// Another process sees the new epoch whole.
	h2 := open(t, newStore(t, hn), name)
	entries := readAll(t, h2, 0)
	checkLog(t, entries, nil)
	want := []string{"summary-0", "old-15", "old-16", "old-17", "old-18", "old-19"}
	for i, e := range entries {
		if e.ID != want[i] {
			t.Fatalf("new epoch entry %d is %s, want %s", i, e.ID, want[i])
		}
	}
	// The old epoch stays readable, unchanged.
	old := readAll(t, h2, 1)
	if len(old) != 20 {
		t.Fatalf("old epoch has %d entries, want 20", len(old))
	}
	checkLog(t, old, nil)
	// Carried ids stay idempotent; appends continue after them.
	if seqs := mustAppend(t, h2, records("old", 19, 2)); seqs[0] != 6 || seqs[1] != 7 {
		t.Fatalf("append after swap got %v, want [6 7]", seqs)
	}
	// A compaction based on a stale epoch loses.
	if _, err := h.NewEpoch(ctx, history.EpochRequest{Epoch: 1, Through: 3, Records: summary}); !errors.Is(err, history.ErrConflict) {
		t.Fatalf("swap from a stale epoch: %v, want ErrConflict", err)
	}
	if _, err := h.NewEpoch(ctx, history.EpochRequest{Epoch: 2, Through: 99, Records: summary}); !errors.Is(err, history.ErrConflict) {
		t.Fatalf("swap through a sequence past the head: %v, want ErrConflict", err)
	}
}

// testEpochSwapConcurrent: appends from another store keep landing while
// the epoch is swapped; every acknowledged record ends up exactly once in
// the new epoch (carried, or appended after the swap), after the summary,
// and nothing the summary folded comes back.
func testEpochSwapConcurrent(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	compactor := open(t, newStore(t, hn), name)
	writer := open(t, newStore(t, hn), name)
	mustAppend(t, compactor, records("w", 0, 10))

	var mu sync.Mutex
	acks := map[string]uint64{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load() && i < 200; i++ {
				id := fmt.Sprintf("c%d-%d", w, i)
				seqs, err := writer.Append(ctx, []history.Record{{ID: id, Data: payload(id)}})
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
	// Swap only once the writers are well under way.
	for {
		mu.Lock()
		n := len(acks)
		mu.Unlock()
		if n >= 20 || len(errs) > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var swapped history.Head
	var swapErr error
	for attempt := 0; attempt < 20; attempt++ {
		head, err := compactor.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		swapped, swapErr = compactor.NewEpoch(ctx, history.EpochRequest{Epoch: head.Epoch, Through: 5, Records: records("summary", 0, 1)})
		if !errors.Is(swapErr, history.ErrConflict) {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("append: %v", err)
	}
	if swapErr != nil {
		t.Fatalf("new epoch: %v", swapErr)
	}
	entries := readAll(t, compactor, 0)
	seen := checkLog(t, entries, nil)
	if entries[0].ID != "summary-0" {
		t.Fatalf("new epoch starts with %s, want summary-0", entries[0].ID)
	}
	for id := range acks {
		if _, ok := seen[id]; !ok {
			t.Fatalf("acknowledged %s is not in the new epoch (swap at %+v)", id, swapped)
		}
	}
	for _, e := range entries[1:] {
		if _, ok := acks[e.ID]; !ok && e.ID[0] == 'c' {
			t.Fatalf("new epoch holds %s, which was never acknowledged", e.ID)
		}
	}
	for i := range 5 {
		if _, ok := seen[fmt.Sprintf("w-%d", i)]; ok {
			t.Fatalf("w-%d was folded into the summary but is still in the new epoch", i)
		}
	}
}

// testEpochSwapWithNothingUnsealed: a new epoch of an epoch that has nothing left to seal: a
// history that holds nothing yet (a reset or an expiry of an empty conversation), an empty
// epoch just made, an epoch no append reached since its own swap wrote it sealed. Each swap
// lands, and another process reads every epoch whole.
func testEpochSwapWithNothingUnsealed(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	h := open(t, newStore(t, hn), name)
	swaps := []struct {
		what string
		req  history.EpochRequest
		want []string // the ids of the epoch it makes
	}{
		{"of an empty history", history.EpochRequest{Epoch: 1}, nil},
		{"of the empty epoch just made", history.EpochRequest{Epoch: 2, Records: records("s", 0, 1)}, []string{"s-0"}},
		{"of an epoch its swap sealed", history.EpochRequest{Epoch: 3, Through: 1, Records: records("s", 1, 1)}, []string{"s-1"}},
	}
	for _, s := range swaps {
		head, err := h.NewEpoch(ctx, s.req)
		if err != nil {
			t.Fatalf("new epoch %s: %v", s.what, err)
		}
		if head.Epoch != s.req.Epoch+1 || head.Sequence != uint64(len(s.want)) {
			t.Fatalf("new epoch %s: head %+v, want epoch %d with %d entries", s.what, head, s.req.Epoch+1, len(s.want))
		}
	}
	other := open(t, newStore(t, hn), name)
	for _, s := range swaps {
		entries := readAll(t, other, s.req.Epoch+1)
		checkLog(t, entries, nil)
		if len(entries) != len(s.want) {
			t.Fatalf("the epoch made %s holds %d entries, want %v", s.what, len(entries), s.want)
		}
		for i, e := range entries {
			if e.ID != s.want[i] {
				t.Fatalf("the epoch made %s holds %s at %d, want %s", s.what, e.ID, e.Seq, s.want[i])
			}
		}
	}
	if seqs := mustAppend(t, other, records("m", 0, 1)); seqs[0] != 2 {
		t.Fatalf("append after the swaps got sequence %d, want 2", seqs[0])
	}
}
