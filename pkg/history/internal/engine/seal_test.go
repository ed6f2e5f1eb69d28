package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/history"
)

// The unsealed tail (tail objects and the entries the index carries) is sealed in the
// background once a commit leaves it at SealBytes of payload, MaxTailObjects pieces or half of
// MaxOpenBytes of index lines, and the next commit drops what the seal holds; until then
// appends stay where they are. (Each append here waits for the background, as a client
// between two appends leaves it time.)
func TestSealPolicy(t *testing.T) {
	tests := map[string]struct {
		opts    Options
		appends []int    // payload bytes of each append
		sealed  []string // the sealed ranges afterwards
	}{
		"a tail of exactly SealBytes is sealed": {
			Options{SealBytes: 100, MaxTailObjects: 100}, []int{60, 40, 1}, []string{"1-2"},
		},
		"a tail under SealBytes is not": {
			Options{SealBytes: 100, MaxTailObjects: 100}, []int{60, 39}, nil,
		},
		"MaxTailObjects pieces are the most a tail holds": {
			Options{SealBytes: 1 << 20, MaxTailObjects: 3}, []int{1, 1, 1, 1}, []string{"1-3"},
		},
		"an index half full of open entries is sealed": {
			// Lines of 30 bytes of binary data take about 66 bytes: two pass half of 200.
			Options{SealBytes: 1 << 20, MaxTailObjects: 100, MaxOpenBytes: 200}, []int{30, 30, 1}, []string{"1-2"},
		},
		"with the defaults small appends stay in the index": {
			Options{}, []int{10, 10, 10, 10, 10}, nil,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			stores, objs := hookStores(t, 2, tt.opts)
			h := openHook(t, stores[0])
			for i, n := range tt.appends {
				rec := history.Record{ID: fmt.Sprintf("m-%d", i+1), Data: binary(n)}
				if _, err := h.Append(context.Background(), []history.Record{rec}); err != nil {
					t.Fatal(err)
				}
				stores[0].WaitBackground()
			}
			if got := sealedRanges(objs); !slices.Equal(got, tt.sealed) {
				t.Fatalf("sealed %v, want %v", got, tt.sealed)
			}
			entries, err := readEpoch(openHook(t, stores[1]), 0)
			if err != nil || len(entries) != len(tt.appends) {
				t.Fatalf("read %d entries, %v; want %d", len(entries), err, len(tt.appends))
			}
		})
	}
}

// SealBytes counts the open entries of an index the handle read from the backend, not only
// those it wrote itself: a process that takes a history over (a restart, another replica)
// seals once the tail reaches SealBytes.
func TestSealBytesCountsTheOpenEntriesRead(t *testing.T) {
	stores, objs := hookStores(t, 2, Options{SealBytes: 100, MaxTailObjects: 100})
	ctx := context.Background()
	if _, err := openHook(t, stores[0]).Append(ctx, []history.Record{{ID: "m-1", Data: binary(60)}}); err != nil {
		t.Fatal(err)
	}
	stores[0].WaitBackground()
	if got := sealedRanges(objs); len(got) != 0 {
		t.Fatalf("sealed %v under SealBytes", got)
	}
	if _, err := openHook(t, stores[1]).Append(ctx, []history.Record{{ID: "m-2", Data: binary(40)}}); err != nil {
		t.Fatal(err)
	}
	stores[1].WaitBackground()
	if got := sealedRanges(objs); !slices.Equal(got, []string{"1-2"}) {
		t.Fatalf("sealed %v once the tail held SealBytes, want [1-2]", got)
	}
}

// A seal makes the tail objects it copied redundant; the commit that drops them from the
// index deletes them (after its acknowledgement) rather than leaving them to Retain. Appends
// too big for the index (MaxOpenBytes 10) are what writes tail objects.
func TestSealDeletesTheTailItCopied(t *testing.T) {
	stores, objs := hookStores(t, 1, Options{MaxTailObjects: 3, MaxOpenBytes: 10})
	h := openHook(t, stores[0])
	for i := 1; i <= 4; i++ {
		appendOne(t, h, fmt.Sprintf("m-%d", i))
		stores[0].WaitBackground()
	}
	if got := sealedRanges(objs); !slices.Equal(got, []string{"1-3"}) {
		t.Fatalf("sealed %v, want [1-3]", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := tailRanges(objs)
		if slices.Equal(left, []string{"4-4"}) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tail objects %v remain after the seal of 1-3, want only 4-4", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A commit that sealed the tail itself (the background seal held up until the tail reached
// twice its bound) but failed to move the index retries: the segment it wrote is there
// already, which is fine (its key determines its content), and the retry commits.
func TestSealRetryFindsItsSegment(t *testing.T) {
	stores, objs := hookStores(t, 2, Options{MaxTailObjects: 2, MaxAttempts: 4})
	h := openHook(t, stores[0])
	var mu sync.Mutex
	var heldKey string
	held, release := make(chan struct{}), make(chan struct{})
	sealed, failed := false, false
	objs.setHook(func(op, key string) error {
		mu.Lock()
		switch {
		case op == "create" && IsSealedKey(key) && heldKey == "":
			heldKey = key // the background seal: held, so the commit must seal
			close(held)
			mu.Unlock()
			<-release
			return nil
		case op == "create" && IsSealedKey(key) && key != heldKey:
			sealed = true
		case op == "replace" && key == indexKey && sealed && !failed:
			failed = true
			mu.Unlock()
			return fmt.Errorf("index: %w", history.ErrUnavailable)
		}
		mu.Unlock()
		return nil
	})
	appendOne(t, h, "m-1")
	appendOne(t, h, "m-2")
	<-held                    // the background seal of 1-2 started and hangs
	for i := 3; i <= 5; i++ { // the fifth would make five pieces: past twice two
		appendOne(t, h, fmt.Sprintf("m-%d", i))
	}
	close(release)
	stores[0].WaitBackground()
	if !failed {
		t.Fatal("the commit never sealed and wrote the index")
	}
	entries, err := readEpoch(openHook(t, stores[1]), 0)
	checkEntries(t, "read from another store", entries, err, 5)
	if got := sealedRanges(objs); !slices.Contains(got, "1-4") {
		t.Fatalf("sealed %v, want the commit's 1-4 among them", got)
	}
	if m := h.(*log).m; m.SealedThrough != 4 {
		t.Fatalf("index sealed through %d, want 4", m.SealedThrough)
	}
}

// A commit that uses a background seal but fails to move the index uses it again when it
// retries: the seal is forgotten only once an index moved past it.
func TestRetryKeepsTheBackgroundSeal(t *testing.T) {
	stores, objs := hookStores(t, 2, Options{MaxTailObjects: 2, MaxAttempts: 4})
	h := openHook(t, stores[0])
	appendOne(t, h, "m-1")
	appendOne(t, h, "m-2")
	stores[0].WaitBackground() // sealed 1-2 in the background
	var mu sync.Mutex
	failed := false
	objs.setHook(func(op, key string) error {
		mu.Lock()
		defer mu.Unlock()
		if op == "replace" && key == indexKey && !failed {
			failed = true
			return fmt.Errorf("index: %w", history.ErrUnavailable)
		}
		return nil
	})
	appendOne(t, h, "m-3")
	if !failed {
		t.Fatal("the index write never failed")
	}
	if m := h.(*log).m; m.SealedThrough != 2 || len(m.open.lines) != 1 {
		t.Fatalf("index sealed through %d with %d open entries, want 2 and 1", m.SealedThrough, len(m.open.lines))
	}
	entries, err := readEpoch(openHook(t, stores[1]), 0)
	checkEntries(t, "read from another store", entries, err, 3)
	if got := sealedRanges(objs); !slices.Equal(got, []string{"1-2"}) {
		t.Fatalf("sealed %v, want [1-2]", got)
	}
}

// sealedRanges and tailRanges list the first-last ranges of the sealed segments and tail
// objects stored, in key order.
func sealedRanges(objs *hookObjects) []string { return dataRanges(objs, false) }

func tailRanges(objs *hookObjects) []string { return dataRanges(objs, true) }

func dataRanges(objs *hookObjects, tail bool) []string {
	var out []string
	for _, key := range objs.keys() {
		if dk, ok := parseDataKey(key); ok && dk.tail == tail {
			out = append(out, fmt.Sprintf("%d-%d", dk.first, dk.last))
		}
	}
	return out
}
