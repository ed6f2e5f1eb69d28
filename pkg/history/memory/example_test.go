package memory_test

import (
	"context"
	"fmt"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/memory"
)

// The calls the controller and the Session API make, on the in-memory store.
func Example() {
	ctx := context.Background()
	store := memory.New(memory.Options{})
	defer func() { _ = store.Close() }()

	h, err := store.Open(ctx, "demo", history.OpenOptions{Create: true})
	if err != nil {
		panic(err)
	}
	seqs, _ := h.Append(ctx, []history.Record{
		{ID: "m1", Data: []byte(`{"role":"user","text":"hi"}`)},
		{ID: "m2", Data: []byte(`{"role":"assistant","text":"hello"}`)},
	})
	retried, _ := h.Append(ctx, []history.Record{{ID: "m2", Data: []byte(`{"role":"assistant","text":"hello"}`)}})
	fmt.Println("sequences", seqs, "retry", retried)

	head, _ := h.Head(ctx)
	_, _ = h.NewEpoch(ctx, history.EpochRequest{
		Epoch: head.Epoch, Through: 1, Records: []history.Record{{ID: "summary-1", Data: []byte(`{"role":"system","text":"summary"}`)}},
	})
	for e, err := range history.All(ctx, h, 0, 1) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.Seq, e.ID)
	}
	// Output:
	// sequences [1 2] retry [2]
	// 1 summary-1
	// 2 m2
}
