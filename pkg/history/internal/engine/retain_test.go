package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// Retain drops the epochs past KeepEpochs from the index and deletes their objects in the
// same call; with nothing to drop it does not write the index (a needless write would make
// concurrent appends lose their compare-and-swap).
func TestRetainEpochs(t *testing.T) {
	ctx := context.Background()
	stores, objs := hookStores(t, 1, Options{})
	h := openHook(t, stores[0])
	for epoch := uint64(1); epoch <= 3; epoch++ {
		appendOne(t, h, fmt.Sprintf("m-%d", epoch))
		if epoch < 3 {
			req := history.EpochRequest{Epoch: epoch, Through: 1, Records: []history.Record{{ID: fmt.Sprintf("s-%d", epoch), Data: []byte(`"x"`)}}}
			if _, err := h.NewEpoch(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	writes := countOps(t, objs, "replace")
	if err := h.Retain(ctx, history.Retention{KeepEpochs: 2}); err != nil {
		t.Fatal(err)
	}
	if n := writes(); n != 0 {
		t.Fatalf("Retain keeping both old epochs wrote the index %d times", n)
	}
	if err := h.Retain(ctx, history.Retention{KeepEpochs: 0}); err != nil {
		t.Fatal(err)
	}
	for _, epoch := range []uint64{1, 2} {
		if _, err := h.Read(ctx, history.ReadOptions{Epoch: epoch}); !errors.Is(err, history.ErrNotFound) {
			t.Fatalf("read of dropped epoch %d: %v, want ErrNotFound", epoch, err)
		}
		for _, key := range objs.keys() {
			if strings.HasPrefix(key, fmt.Sprintf("e%d-", epoch)) {
				t.Fatalf("Retain left %s of dropped epoch %d", key, epoch)
			}
		}
	}
	entries, err := readEpoch(h, 0)
	if got := ids(entries); err != nil || strings.Join(got, " ") != "s-2 m-2 m-3" {
		t.Fatalf("current epoch: %v, %v; want s-2 m-2 m-3", got, err)
	}
}

// Retain in another process while an epoch swap has written the new epoch's segments but not
// yet moved the index: the segments are numbered past the current epoch, so Retain leaves
// them, and the swap lands whole.
func TestRetainDuringEpochSwap(t *testing.T) {
	ctx := context.Background()
	stores, objs := hookStores(t, 3, Options{})
	h := openHook(t, stores[0])
	for i := 1; i <= 3; i++ {
		appendOne(t, h, fmt.Sprintf("m-%d", i))
	}
	race := newRacer(t, objs)
	race.arm(func() {
		if err := openHook(t, stores[1]).Retain(ctx, history.Retention{}); err != nil {
			t.Error(err)
		}
	})
	req := history.EpochRequest{Epoch: 1, Through: 2, Records: []history.Record{{ID: "s-1", Data: []byte(`"s-1"`)}}}
	if _, err := h.NewEpoch(ctx, req); err != nil {
		t.Fatal(err)
	}
	if !race.ran() {
		t.Fatal("the swap never moved the index")
	}
	entries, err := readEpoch(openHook(t, stores[2]), 0)
	if got := ids(entries); err != nil || strings.Join(got, " ") != "s-1 m-3" {
		t.Fatalf("new epoch: %v, %v; want s-1 m-3", got, err)
	}
}

// countOps counts the operations op on the objects from now on.
func countOps(t *testing.T, objs *hookObjects, op string) func() int {
	t.Helper()
	var mu sync.Mutex
	n := 0
	objs.setHook(func(o, _ string) error {
		if o == op {
			mu.Lock()
			n++
			mu.Unlock()
		}
		return nil
	})
	t.Cleanup(func() { objs.setHook(nil) })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}
