package historytest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

var errDiffers = errors.New("stored with other data")

// sameData refuses a record whose id is stored with other data.
func sameData(stored history.Entry, rec history.Record) error {
	if !bytes.Equal(stored.Data, rec.Data) {
		return errDiffers
	}
	return nil
}

// testAppendWith: AppendWith's check sees the stored entry of every known id, wherever it
// lives (the index, a tail object, a sealed segment read by another process, an earlier
// record of the same batch); a refused batch stores none of its records; the answer names
// the epoch the records landed in.
func testAppendWith(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	h := open(t, newStore(t, hn), name)
	opts := history.AppendOptions{Same: sameData}
	appendWith := func(h history.History, recs []history.Record) (history.Appended, error) {
		t.Helper()
		return h.AppendWith(ctx, recs, opts)
	}
	mustAppend(t, h, records("r", 0, 5))

	got, err := appendWith(h, append(records("r", 2, 1), records("n", 1, 1)...))
	if err != nil || got.Epoch != 1 || len(got.Sequences) != 2 || got.Sequences[0] != 3 || got.Sequences[1] != 6 {
		t.Fatalf("a retry and a new record: %+v, %v; want epoch 1, [3 6]", got, err)
	}
	if head, err := h.Head(ctx); err != nil || got.Head != head {
		t.Fatalf("the append answered the head %+v; Head reads %+v (%v)", got.Head, head, err)
	}
	other := []history.Record{records("n", 2, 1)[0], {ID: "r-3", Data: []byte(`"other"`)}}
	if _, err := appendWith(h, other); !errors.Is(err, errDiffers) {
		t.Fatalf("an id stored with other data: %v, want the check's error", err)
	}
	twice := []history.Record{{ID: "d-1", Data: []byte(`"one"`)}, {ID: "d-1", Data: []byte(`"two"`)}}
	if _, err := appendWith(h, twice); !errors.Is(err, errDiffers) {
		t.Fatalf("one id twice in a batch with other data: %v, want the check's error", err)
	}
	if head, _ := h.Head(ctx); head.Sequence != 6 {
		t.Fatalf("refused batches moved the head to %d, want 6", head.Sequence)
	}

	// Sealed and read by another process with nothing cached.
	for i := range 72 {
		mustAppend(t, h, records("fill", i, 1))
	}
	h2 := open(t, newStore(t, hn), name)
	if _, err := appendWith(h2, []history.Record{{ID: "r-0", Data: []byte(`"other"`)}}); !errors.Is(err, errDiffers) {
		t.Fatalf("a sealed id with other data, from another store: %v, want the check's error", err)
	}
	if got, err := appendWith(h2, records("r", 0, 1)); err != nil || got.Sequences[0] != 1 {
		t.Fatalf("a sealed id again, from another store: %+v, %v; want [1]", got, err)
	}
	checkLog(t, readAll(t, h2, 0), nil)

	head, err := h.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.NewEpoch(ctx, history.EpochRequest{Epoch: head.Epoch, Through: head.Sequence, Records: records("s", 0, 1)}); err != nil {
		t.Fatal(err)
	}
	got, err = appendWith(h2, records("after", 0, 1))
	if err != nil || got.Epoch != 2 || got.Sequences[0] != 2 {
		t.Fatalf("after a new epoch: %+v, %v; want epoch 2, [2]", got, err)
	}
	if head, err := h2.Head(ctx); err != nil || got.Head != head || head.Epoch != 2 || head.Sequence != 2 {
		t.Fatalf("after a new epoch the append answered the head %+v; Head reads %+v (%v); want epoch 2 at 2", got.Head, head, err)
	}
}
