package engine

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// A reader of another process lists an epoch's sealed segments once and fetches each object
// once (objects are immutable, so its cache never goes stale), and only objects that exist;
// only the index is read again, once per read.
func TestReaderFetchesEachObjectOnce(t *testing.T) {
	stores, objs := hookStores(t, 2, Options{MaxTailObjects: 2})
	h := openHook(t, stores[0])
	for i := 1; i <= 7; i++ {
		appendOne(t, h, fmt.Sprintf("m-%d", i))
	}
	if len(sealedRanges(objs)) == 0 {
		t.Fatal("nothing sealed; the test needs sealed segments")
	}
	var mu sync.Mutex
	lists, gets := 0, map[string]int{}
	objs.setHook(func(op, key string) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case op == "list":
			lists++
		case op == "get" && key != indexKey:
			gets[key]++
		}
		return nil
	})
	t.Cleanup(func() { objs.setHook(nil) })
	reader := openHook(t, stores[1])
	for range 3 {
		entries, err := readEpoch(reader, 0)
		checkEntries(t, "read from another store", entries, err, 7)
	}
	mu.Lock()
	defer mu.Unlock()
	if lists != 1 {
		t.Errorf("three reads listed the sealed segments %d times, want once", lists)
	}
	stored := objs.keys()
	for key, n := range gets {
		if n != 1 || !slices.Contains(stored, key) {
			t.Errorf("fetched %q %d times (stored: %v)", key, n, slices.Contains(stored, key))
		}
	}
}
