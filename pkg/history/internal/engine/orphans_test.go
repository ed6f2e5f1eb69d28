package engine

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// A commit that loses its race to another process leaves the tail object it wrote for the
// sequences the other took (an append that does not fit the open tail writes one). Once the
// fresh index shows that object can never be committed, the handle deletes it, once: Retain
// finds nothing left to delete. An append that fits the open tail writes nothing but the index,
// so its lost race leaves nothing either.
func TestLostRaceLeavesNoGarbage(t *testing.T) {
	tests := map[string]struct {
		// race runs in the other process while this one is about to move the index.
		race func(t *testing.T, other history.History)
		want []string // the ids of the current epoch afterwards
	}{
		"the other appends": {
			race: func(t *testing.T, other history.History) { appendOne(t, other, "theirs") },
			want: []string{"m-1", "theirs", "mine"},
		},
		"the other starts a new epoch": {
			race: func(t *testing.T, other history.History) {
				req := history.EpochRequest{Epoch: 1, Through: 1, Records: []history.Record{{ID: "s-1", Data: []byte(`"s-1"`)}}}
				if _, err := other.NewEpoch(context.Background(), req); err != nil {
					t.Error(err)
				}
			},
			want: []string{"s-1", "mine"},
		},
	}
	appends := map[string]struct {
		opts  Options
		tails bool // every append writes a tail object
	}{
		"in the index":    {opts: Options{}},
		"in tail objects": {opts: Options{MaxOpenBytes: 2}, tails: true},
	}
	for name, tt := range tests {
		for where, ap := range appends {
			t.Run(name+"/"+where, func(t *testing.T) {
				stores, objs := hookStores(t, 2, ap.opts)
				h, other := openHook(t, stores[0]), openHook(t, stores[1])
				appendOne(t, h, "m-1")
				race := newRacer(t, objs)
				race.arm(func() { tt.race(t, other) })
				appendOne(t, h, "mine")
				if !race.ran() {
					t.Fatal("the append never moved the index")
				}
				if n := race.tailsCreated(); ap.tails && n < 2 {
					t.Fatalf("%d tail objects written, want the lost attempt's and the retry's (else nothing is checked)", n)
				}
				checkNoGarbage(t, h, objs)
				// A second lost race: the first orphan must not be deleted again.
				race.arm(func() { appendOne(t, other, "theirs-2") })
				appendOne(t, h, "mine-2")
				if !race.ran() {
					t.Fatal("the second append never moved the index")
				}
				checkNoGarbage(t, h, objs)
				entries, err := readEpoch(openHook(t, stores[1]), 0)
				if err != nil {
					t.Fatal(err)
				}
				want := append(slices.Clone(tt.want), "theirs-2", "mine-2")
				if got := ids(entries); !slices.Equal(got, want) {
					t.Fatalf("history holds %v, want %v", got, want)
				}
				if deleted := race.deletedTwice(); len(deleted) > 0 {
					t.Fatalf("deleted more than once: %v", deleted)
				}
			})
		}
	}
}

// checkNoGarbage fails when Retain finds an object to delete (with every epoch kept).
func checkNoGarbage(t *testing.T, h history.History, objs *hookObjects) {
	t.Helper()
	before := objs.keys()
	if err := h.Retain(context.Background(), history.Retention{KeepEpochs: 10}); err != nil {
		t.Fatal(err)
	}
	if after := objs.keys(); !slices.Equal(after, before) {
		t.Fatalf("Retain found garbage the handle left: %v", diff(before, after))
	}
}

// racer runs a race, once it is armed, in the middle of the next index write (before that
// write reaches the backend), and counts the deletes of every key and the tail objects created.
type racer struct {
	mu      sync.Mutex
	pending func()
	deletes map[string]int
	tails   int
}

func newRacer(t *testing.T, objs *hookObjects) *racer {
	t.Helper()
	r := &racer{deletes: map[string]int{}}
	objs.setHook(func(op, key string) error {
		r.mu.Lock()
		if op == "delete" {
			r.deletes[key]++
		}
		if op == "create" && IsTailKey(key) {
			r.tails++
		}
		var race func()
		if op == "replace" && key == indexKey {
			race, r.pending = r.pending, nil
		}
		r.mu.Unlock()
		if race != nil {
			race() // its own index write passes: nothing is armed
		}
		return nil
	})
	t.Cleanup(func() { objs.setHook(nil) })
	return r
}

func (r *racer) arm(race func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = race
}

func (r *racer) ran() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending == nil
}

func (r *racer) tailsCreated() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tails
}

func (r *racer) deletedTwice() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for key, n := range r.deletes {
		if n > 1 {
			out = append(out, key)
		}
	}
	return out
}

func ids(entries []history.Entry) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.ID)
	}
	return out
}

// diff returns the keys of before missing from after.
func diff(before, after []string) []string {
	var out []string
	for _, k := range before {
		if !slices.Contains(after, k) {
			out = append(out, k)
		}
	}
	return out
}
