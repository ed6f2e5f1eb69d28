package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/history"
)

// bombStores returns n stores sharing budget over one history whose sealed segments were each
// replaced by a compressed segment that truthfully declares the largest size the store
// accepts and inflates to one line that never ends: the costliest object a bucket's writer
// can plant. Each store reads it afresh (nothing cached).
func bombStores(t *testing.T, n int, budget *history.DecodeBudget) []*Store {
	t.Helper()
	opts := Options{MaxObjectBytes: 4 << 20, DecodeBudget: budget}
	stores, objs := hookStores(t, n+1, opts)
	h := openHook(t, stores[n])
	for i := range 72 { // past twice the pieces of an unsealed tail: sealed segments
		appendOne(t, h, fmt.Sprintf("m-%d", i))
	}
	stores[n].WaitBackground()
	head := []byte(`{"s":1,"id":"bomb","b":"`)
	bomb := compress(append(head, bytes.Repeat([]byte("A"), int(opts.withDefaults().readLimit())-len(head))...))
	objs.mu.Lock()
	planted := 0
	for key, item := range objs.items {
		if IsSealedKey(key) {
			item.data = bomb
			objs.items[key] = item
			planted++
		}
	}
	objs.mu.Unlock()
	if planted == 0 {
		t.Fatal("no sealed segment to replace")
	}
	return stores[:n]
}

// Reads of hostile segments at once decode no more at a time than the shared budget allows:
// with room for one, eight stores reading the bomb together decode it one after the other, and
// each read still ends in ErrCorrupt. Without the budget all eight decode at once.
func TestDecodesAtOnceStayWithinTheBudget(t *testing.T) {
	const readers = 8
	// One bomb decode costs about twice the 4 MiB read limit: room for one, not two.
	budget := history.NewDecodeBudget(12<<20, time.Minute)
	stores := bombStores(t, readers, budget)

	var decoding, most atomic.Int32
	Failpoint = func(name string) {
		switch name {
		case "decoding":
			now := decoding.Add(1)
			for m := most.Load(); now > m; m = most.Load() {
				if most.CompareAndSwap(m, now) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond) // let the other readers arrive while this one decodes
		case "decoded":
			decoding.Add(-1)
		}
	}
	t.Cleanup(func() { Failpoint = nil })

	var wg sync.WaitGroup
	errs := make([]error, readers)
	for i, s := range stores {
		wg.Go(func() {
			h, err := s.Open(context.Background(), convName, history.OpenOptions{})
			if err == nil {
				_, err = h.Read(context.Background(), history.ReadOptions{})
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, history.ErrCorrupt) {
			t.Errorf("reader %d: %v, want ErrCorrupt", i, err)
		}
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d bombs decoded at once, want 1: the budget has room for one", m)
	}
	if st := budget.Stats(); st.InUse != 0 || st.Waits == 0 {
		t.Errorf("budget after the reads: %+v, want nothing in use and some reads that waited", st)
	}
}

// A read that cannot have its part of the budget in time fails with ErrBusy, an
// ErrUnavailable (retry later), without decoding anything.
func TestDecodeWithoutBudgetIsBusy(t *testing.T) {
	budget := history.NewDecodeBudget(12<<20, 50*time.Millisecond)
	stores := bombStores(t, 1, budget)
	release, err := budget.Acquire(context.Background(), 12<<20) // everything, held elsewhere
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	h, err := stores[0].Open(context.Background(), convName, history.OpenOptions{})
	if err == nil {
		_, err = h.Read(context.Background(), history.ReadOptions{})
	}
	if !errors.Is(err, history.ErrBusy) || !errors.Is(err, history.ErrUnavailable) {
		t.Fatalf("read while the budget is held: %v, want ErrBusy (an ErrUnavailable)", err)
	}
	if st := budget.Stats(); st.Refusals == 0 {
		t.Fatalf("budget %+v counts no refusal", st)
	}
}
