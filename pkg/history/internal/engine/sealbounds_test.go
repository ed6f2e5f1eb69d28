package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// The index stays bounded when background seals fail: a commit seals the unsealed tail itself
// once it holds twice SealBytes, or would point at more than twice MaxTailObjects pieces. An
// append that fits the open tail then still goes inside the index.
func TestCommitSealsWhenBackgroundSealsFail(t *testing.T) {
	ctx := context.Background()
	line := func(i int) history.Record { return history.Record{ID: fmt.Sprintf("m-%d", i), Data: []byte(`"x"`)} }
	lineSize := len(encodeLine(history.Entry{Seq: 1, ID: "m-1", Data: []byte(`"x"`)}))

	t.Run("twice SealBytes of unsealed payload", func(t *testing.T) {
		stores, objs := hookStores(t, 1, Options{SealBytes: 50, MaxTailObjects: 100})
		seals := failBackgroundSeals(t, objs)
		h := openHook(t, stores[0])
		rec := func(i int) []history.Record {
			return []history.Record{{ID: fmt.Sprintf("m-%d", i), Data: binary(25)}}
		}
		for i := 1; i <= 4; i++ { // 100 bytes: exactly twice SealBytes
			if _, err := h.Append(ctx, rec(i)); err != nil {
				t.Fatal(err)
			}
			stores[0].WaitBackground()
		}
		if n := seals.inCommit.Load(); n != 0 {
			t.Fatalf("%d seals inside a commit below twice SealBytes", n)
		}
		seals.allow()
		if _, err := h.Append(ctx, rec(5)); err != nil {
			t.Fatal(err)
		}
		if n := seals.inCommit.Load(); n != 1 {
			t.Fatalf("%d seals inside the commit after 100 unsealed bytes (SealBytes 50), want 1", n)
		}
	})

	t.Run("twice MaxTailObjects tail objects", func(t *testing.T) {
		// Each append is too big for the open tail: one tail object per commit.
		stores, objs := hookStores(t, 2, Options{MaxTailObjects: 2, MaxOpenBytes: 16})
		seals := failBackgroundSeals(t, objs)
		h := openHook(t, stores[0])
		for i := 1; i <= 5; i++ {
			if i == 5 {
				seals.allow()
			}
			if _, err := h.Append(ctx, []history.Record{line(i)}); err != nil {
				t.Fatal(err)
			}
			stores[0].WaitBackground()
			if m := h.(*log).m; len(m.Tail) > 4 {
				t.Fatalf("after append %d the index lists %d tail objects, want at most 4", i, len(m.Tail))
			}
		}
		if n := seals.inCommit.Load(); n != 1 {
			t.Fatalf("%d seals inside a commit, want 1 (the fifth)", n)
		}
		entries, err := readEpoch(openHook(t, stores[1]), 0)
		if err != nil || len(entries) != 5 {
			t.Fatalf("read %d entries, %v", len(entries), err)
		}
	})

	t.Run("an append after the commit's seal goes inside the index", func(t *testing.T) {
		// The open tail holds exactly one line: every other append writes a tail object.
		stores, objs := hookStores(t, 2, Options{MaxTailObjects: 1, MaxOpenBytes: lineSize})
		seals := failBackgroundSeals(t, objs)
		h := openHook(t, stores[0])
		for i := 1; i <= 4; i++ {
			if _, err := h.Append(ctx, []history.Record{line(i)}); err != nil {
				t.Fatal(err)
			}
			stores[0].WaitBackground()
		}
		seals.allow()
		ops := countOpsByKind(objs)
		if _, err := h.Append(ctx, []history.Record{line(5)}); err != nil {
			t.Fatal(err)
		}
		if n := seals.inCommit.Load(); n != 1 {
			t.Fatalf("%d seals inside the fifth commit, want 1", n)
		}
		if n := ops.get("create tail"); n != 0 {
			t.Fatalf("the append after the seal wrote %d tail objects; it fits the open tail", n)
		}
		entries, err := readEpoch(openHook(t, stores[1]), 0)
		if err != nil || len(entries) != 5 {
			t.Fatalf("read %d entries, %v", len(entries), err)
		}
	})
}

// A background seal starts once the open tail is half full.
func TestBackgroundSealAtHalfTheOpenTail(t *testing.T) {
	rec := history.Record{ID: "m-1", Data: []byte(`"m-1"`)}
	size := len(encodeLine(history.Entry{Seq: 1, ID: rec.ID, Data: rec.Data}))
	stores, objs := hookStores(t, 1, Options{MaxOpenBytes: 2 * size})
	h := openHook(t, stores[0])
	if _, err := h.Append(context.Background(), []history.Record{rec}); err != nil {
		t.Fatal(err)
	}
	stores[0].WaitBackground()
	if got := sealedRanges(objs); len(got) != 1 || got[0] != "1-1" {
		t.Fatalf("sealed %v after the open tail reached half its bound, want [1-1]", got)
	}
}

// sealGate fails every sealed segment's create until allow, and counts the seals made inside
// a commit (the "sealed" failpoint).
type sealGate struct {
	mu       sync.Mutex
	failing  bool
	inCommit atomic.Int32
}

func failBackgroundSeals(t *testing.T, objs *hookObjects) *sealGate {
	t.Helper()
	g := &sealGate{failing: true}
	objs.setHook(func(op, key string) error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.failing && op == "create" && IsSealedKey(key) {
			return fmt.Errorf("%s: %w", key, history.ErrUnavailable)
		}
		return nil
	})
	Failpoint = func(name string) {
		if name == "sealed" {
			g.inCommit.Add(1)
		}
	}
	t.Cleanup(func() { Failpoint = nil; objs.setHook(nil) })
	return g
}

func (g *sealGate) allow() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failing = false
}
