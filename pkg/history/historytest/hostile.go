package historytest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

// BombBytes is what the decompression bomb of the hostile-history tests inflates to: more than
// a manager's memory limit, about 1 MB compressed.
const BombBytes = 900 << 20

// ReplaceSealed overwrites every sealed segment of a history with data, as someone who can
// write the bucket or the ConfigMaps could, and returns how many it replaced. Objects may be
// immutable in the backend, so it deletes and creates. s must be built on the engine (every
// backend of this module is).
func ReplaceSealed(ctx context.Context, s history.Store, name string, data []byte) (int, error) {
	waitBackground(s)
	r, ok := s.(interface {
		ObjectsOf(name string) (engine.Objects, error)
	})
	if !ok {
		return 0, fmt.Errorf("store %T gives no raw access to its objects", s)
	}
	o, err := r.ObjectsOf(name)
	if err != nil {
		return 0, err
	}
	infos, err := o.List(ctx, "")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, info := range infos {
		if !engine.IsSealedKey(info.Key) {
			continue
		}
		if err := o.Delete(ctx, info.Key); err != nil {
			return n, err
		}
		if _, err := o.Create(ctx, info.Key, data); err != nil {
			return n, fmt.Errorf("plant %s: %w", info.Key, err)
		}
		n++
	}
	return n, nil
}

// testHostileSegment: a sealed segment replaced by a decompression bomb whose trailer hides
// its size is refused with ErrCorrupt once inflation reaches the store's object limit, having
// allocated a small part of what the bomb inflates to; another history of the same store keeps
// working. (The bomb's 900 MiB, held as inflated bytes, would take a manager past its memory
// limit.)
func testHostileSegment(t *testing.T, hn Harness) {
	ctx := context.Background()
	hostile, other := conversationName(t), conversationName(t)
	s := newStore(t, hn)
	h := open(t, s, hostile)
	for i := range 72 { // past twice the 32 pieces of an unsealed tail: sealed
		mustAppend(t, h, records("h", i, 1))
	}
	if n, err := ReplaceSealed(ctx, s, hostile, HideSize(GzipBomb(BombBytes))); err != nil || n == 0 {
		t.Fatalf("replaced %d sealed segments after 72 appends: %v", n, err)
	}

	fresh := newStore(t, hn) // nothing cached
	var err error
	allocated := allocatedBy(func() { _, err = open(t, fresh, hostile).Read(ctx, history.ReadOptions{}) })
	if !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("read of a history holding a decompression bomb: %v, want ErrCorrupt", err)
	}
	if allocated > BombBytes/3 {
		t.Fatalf("reading the bomb allocated %d MiB: inflation did not stop at the object limit", allocated>>20)
	}

	o := open(t, fresh, other)
	mustAppend(t, o, records("o", 0, 3))
	if entries := readAll(t, o, 0); len(entries) != 3 {
		t.Fatalf("the other history holds %d entries, want 3", len(entries))
	}
}

// allocatedBy is the heap fn allocated, all goroutines together (the suite runs nothing else).
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
