package engine

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// The largest record Append and NewEpoch accept fits one object, base64 (binary data) with a
// message id, and one byte more is refused up front with ErrTooLarge instead of failing a
// whole group commit at the backend. docs/storage.md gives the figure for ConfigMaps (900 KiB
// objects): about 675 KiB.
//
// (A 512-byte id, the longest checkID allows, takes the object 34 bytes past MaxObjectBytes,
// and 2,594 bytes when JSON escapes every byte: the allowance for the id is subtracted before
// the base64 factor. Both backends have room to spare, TestLargestObjectsFit shows the
// ConfigMap case on a real API server; docs/testing.md records the finding.)
func TestRecordSizeLimit(t *testing.T) {
	id := "0f5e1a8c-6a47-4b9e-9d36-2f7c1e4b8a90" // a message id: a UUID
	for _, maxObject := range []int{4096, 900 << 10} {
		opts := Options{MaxObjectBytes: maxObject}
		limit := opts.withDefaults().maxRecordBytes()
		if maxObject == 900<<10 && (limit < 674<<10 || limit >= 676<<10) {
			t.Errorf("objects of 900 KiB take records up to %d bytes, not about 675 KiB", limit)
		}
		stores, objs := hookStores(t, 2, opts)
		objs.maxBytes = maxObject
		h := openHook(t, stores[0])
		ctx := context.Background()
		if _, err := h.Append(ctx, []history.Record{{ID: id, Data: binary(limit)}}); err != nil {
			t.Fatalf("objects of %d bytes: append of the largest record (%d bytes): %v", maxObject, limit, err)
		}
		_, err := h.Append(ctx, []history.Record{{ID: "over", Data: binary(limit + 1)}})
		if !errors.Is(err, history.ErrTooLarge) {
			t.Fatalf("objects of %d bytes: append of one byte more: %v, want ErrTooLarge", maxObject, err)
		}
		entries, err := readEpoch(openHook(t, stores[1]), 0)
		if err != nil || len(entries) != 1 || !bytes.Equal(entries[0].Data, binary(limit)) {
			t.Fatalf("objects of %d bytes: read back %d entries, %v", maxObject, len(entries), err)
		}

		req := history.EpochRequest{Epoch: 1, Through: 1, Records: []history.Record{{ID: "too-big", Data: binary(limit + 1)}}}
		if _, err := h.NewEpoch(ctx, req); !errors.Is(err, history.ErrTooLarge) {
			t.Fatalf("objects of %d bytes: new epoch with one byte more: %v, want ErrTooLarge", maxObject, err)
		}
		req.Records = []history.Record{{ID: "summary-" + id, Data: binary(limit)}}
		if _, err := h.NewEpoch(ctx, req); err != nil {
			t.Fatalf("objects of %d bytes: new epoch with the largest record: %v", maxObject, err)
		}
	}
}

// With the longest id, every byte of it escaped, the largest record takes its object 2,594
// bytes past MaxObjectBytes (the finding above). Both backends have that room: the ConfigMap
// backend's 900 KiB objects go in ConfigMaps of up to 1 MiB. The record is stored whole, in
// one object, and reads back.
func TestLargestRecordWithTheLongestID(t *testing.T) {
	const maxObject = 900 << 10
	opts := Options{MaxObjectBytes: maxObject}
	limit := opts.withDefaults().maxRecordBytes()
	stores, objs := hookStores(t, 2, opts)
	objs.maxBytes = 1 << 20
	id := strings.Repeat("<", history.MaxRecordIDBytes) // json.Marshal writes each as \u003c
	if _, err := openHook(t, stores[0]).Append(context.Background(), []history.Record{{ID: id, Data: binary(limit)}}); err != nil {
		t.Fatalf("append: %v", err)
	}
	entries, err := readEpoch(openHook(t, stores[1]), 0)
	if err != nil || len(entries) != 1 || entries[0].ID != id || !bytes.Equal(entries[0].Data, binary(limit)) {
		t.Fatalf("read back %d entries, %v", len(entries), err)
	}
}

// binary returns n bytes that are not JSON, so they are stored base64.
func binary(n int) []byte { return bytes.Repeat([]byte{0xff}, n) }

// A checkpoint may take a whole object, and no more.
func TestCheckpointSizeLimit(t *testing.T) {
	stores, objs := hookStores(t, 1, Options{MaxObjectBytes: 1000})
	objs.maxBytes = 1000
	h := openHook(t, stores[0])
	ctx := context.Background()
	d, err := h.PutCheckpoint(ctx, binary(1000))
	if err != nil {
		t.Fatalf("checkpoint of exactly the object size: %v", err)
	}
	if data, err := h.GetCheckpoint(ctx, d); err != nil || len(data) != 1000 {
		t.Fatalf("get checkpoint: %d bytes, %v", len(data), err)
	}
	if _, err := h.PutCheckpoint(ctx, binary(1001)); !errors.Is(err, history.ErrTooLarge) {
		t.Fatalf("checkpoint of one byte more: %v, want ErrTooLarge", err)
	}
}

// The history cap (MaxHistoryBytes) allows a history of exactly the cap, counts every request
// of one group commit, says by how much a refused append would exceed it, and never refuses
// the retry of records it already holds.
func TestHistoryCap(t *testing.T) {
	ctx := context.Background()
	rec := func(id string, n int) history.Record { return history.Record{ID: id, Data: binary(n)} }

	t.Run("a history of exactly the cap", func(t *testing.T) {
		stores, _ := hookStores(t, 1, Options{MaxHistoryBytes: 100})
		h := openHook(t, stores[0])
		if _, err := h.Append(ctx, []history.Record{rec("a", 60), rec("b", 40)}); err != nil {
			t.Fatalf("append up to the cap: %v", err)
		}
		_, err := h.Append(ctx, []history.Record{rec("c", 1)})
		if !errors.Is(err, history.ErrTooLarge) || !strings.Contains(err.Error(), "would hold 101 bytes") {
			t.Fatalf("append past the cap: %v, want ErrTooLarge saying it would hold 101 bytes", err)
		}
	})

	t.Run("requests of one group commit count together", func(t *testing.T) {
		q := watchQueued(t)
		stores, objs := hookStores(t, 1, Options{MaxHistoryBytes: 100})
		h := openHook(t, stores[0])
		gate := holdNextCommit(t, objs)
		held := q.start(t, h, []history.Record{rec("held", 1)})
		await(t, gate.held, "the first commit never wrote the index")
		first := q.start(t, h, []history.Record{rec("first", 60)})
		second := q.start(t, h, []history.Record{rec("second", 60)})
		close(gate.release)
		for _, r := range []appendResult{wait(t, held), wait(t, first)} {
			if r.err != nil {
				t.Fatalf("append within the cap: %v", r.err)
			}
		}
		r := wait(t, second)
		if !errors.Is(r.err, history.ErrTooLarge) || !strings.Contains(r.err.Error(), "would hold 121 bytes") {
			t.Fatalf("second request of the commit: %v, want ErrTooLarge saying it would hold 121 bytes", r.err)
		}
	})

	t.Run("a retry over the cap gets its sequences", func(t *testing.T) {
		// Written without a cap (or before it was lowered): the history is over it.
		b := &hookBackend{}
		unlimited, capped := New(b, Options{}), New(b, Options{MaxHistoryBytes: 50})
		t.Cleanup(func() { _ = unlimited.Close(); _ = capped.Close() })
		recs := []history.Record{rec("a", 60), rec("b", 40)}
		if _, err := openHook(t, unlimited).Append(ctx, recs); err != nil {
			t.Fatal(err)
		}
		seqs, err := openHook(t, capped).Append(ctx, recs)
		if err != nil || len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 2 {
			t.Fatalf("retry of stored records over the cap: %v, %v; want [1 2]", seqs, err)
		}
	})
}

// An append whose lines fill the open tail exactly still goes inside the index: one request,
// no tail object.
func TestAppendFillingTheOpenTail(t *testing.T) {
	rec := history.Record{ID: "m-1", Data: []byte(`"m-1"`)}
	line := encodeLine(history.Entry{Seq: 1, ID: rec.ID, Data: rec.Data})
	stores, objs := hookStores(t, 1, Options{MaxOpenBytes: len(line)})
	h := openHook(t, stores[0])
	ops := countOpsByKind(objs)
	if _, err := h.Append(context.Background(), []history.Record{rec}); err != nil {
		t.Fatal(err)
	}
	if got := ops.get("create tail"); got != 0 {
		t.Fatalf("%d tail objects written for an append that fits the open tail exactly", got)
	}
	if got := ops.get("replace index"); got != 1 {
		t.Fatalf("%d index replaces, want 1", got)
	}
}

// The open tail's bound holds for a handle that read the index from the backend (another
// process, or this one after a restart): it counts the lines the index carries as their
// writer did. An append that fills the open tail exactly goes inside the index; one byte more
// goes to a tail object.
func TestOpenTailBoundAfterReadingTheIndex(t *testing.T) {
	ctx := context.Background()
	carried := []history.Record{{ID: "m-1", Data: []byte(`"m-1"`)}, {ID: "m-2", Data: []byte(`"m-2"`)}}
	next := history.Record{ID: "m-3", Data: []byte(`"` + strings.Repeat("x", 200) + `"`)}
	size := len(encodeLine(history.Entry{Seq: 3, ID: next.ID, Data: next.Data}))
	for i, rec := range carried {
		size += len(encodeLine(history.Entry{Seq: uint64(i + 1), ID: rec.ID, Data: rec.Data}))
	}
	for _, tt := range []struct {
		name      string
		openBytes int
		tails     int
	}{
		{name: "filling the open tail exactly", openBytes: size, tails: 0},
		{name: "one byte past it", openBytes: size - 1, tails: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The carried entries take less than half the bound: no seal starts.
			stores, objs := hookStores(t, 2, Options{MaxOpenBytes: tt.openBytes})
			if _, err := openHook(t, stores[0]).Append(ctx, carried); err != nil {
				t.Fatal(err)
			}
			h := openHook(t, stores[1])
			ops := countOpsByKind(objs)
			if _, err := h.Append(ctx, []history.Record{next}); err != nil {
				t.Fatal(err)
			}
			if got := ops.get("create tail"); got != tt.tails {
				t.Fatalf("%d tail objects written, want %d", got, tt.tails)
			}
		})
	}
}
