package engine

import (
	"context"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// The index's generation grows on every write of it (docs/storage.md): appends, epoch swaps,
// and Retain dropping old epochs. It keeps two versions of the index from having the same
// bytes, for backends whose If-Match compares content hashes.
func TestIndexGenerationGrowsOnEveryWrite(t *testing.T) {
	ctx := context.Background()
	stores, objs := hookStores(t, 1, Options{})
	h := openHook(t, stores[0])
	var last uint64
	check := func(after string) {
		t.Helper()
		data, _, err := objs.Get(ctx, indexKey)
		if err != nil {
			t.Fatal(err)
		}
		m, err := decodeManifest(data)
		if err != nil {
			t.Fatal(err)
		}
		if m.Generation <= last {
			t.Fatalf("after %s the index has generation %d, before it %d", after, m.Generation, last)
		}
		last = m.Generation
	}
	appendOne(t, h, "m-1")
	check("an append")
	swap := func(req history.EpochRequest) {
		t.Helper()
		if _, err := h.NewEpoch(ctx, req); err != nil {
			t.Fatal(err)
		}
		check("an epoch swap")
	}
	swap(history.EpochRequest{Epoch: 1, Through: 1, Records: []history.Record{{ID: "s-1", Data: []byte(`"s-1"`)}}})
	appendOne(t, h, "m-2")
	check("an append in the new epoch")
	swap(history.EpochRequest{Epoch: 2, Through: 2})
	if err := h.Retain(ctx, history.Retention{}); err != nil {
		t.Fatal(err)
	}
	check("Retain dropping the old epochs")
}
