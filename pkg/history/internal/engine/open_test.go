package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
	"github.com/parley-dev/parley/pkg/history/memory"
)

// Open reads or writes the index once, and the first append starts from what Open saw instead
// of reading it again; ProbablyNew creates before reading. These are the requests a new
// Conversation costs the API server (ConfigMap backend), so they are pinned here.
func TestOpenThenAppendRequests(t *testing.T) {
	tests := []struct {
		name                 string
		exists, create, hint bool
		reads, writes        int64 // Open plus one Append
	}{
		// read (missing), create index; append: the index (the entry goes inside it)
		{name: "new history", create: true, reads: 1, writes: 2},
		// create index; append: the index
		{name: "new history, ProbablyNew", create: true, hint: true, writes: 2},
		// read index (the ids already stored are in it); append: the index
		{name: "existing history", exists: true, reads: 1, writes: 1},
		{name: "existing history, Create", exists: true, create: true, reads: 1, writes: 1},
		// refused create, read index; append as above
		{name: "existing history, ProbablyNew", exists: true, create: true, hint: true, reads: 1, writes: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			first := memory.New(memory.Options{})
			if tt.exists {
				appendN(t, first, "a", 2)
			}
			s := memory.Reopen(first) // another process: nothing cached
			h, err := s.Open(ctx, "a", history.OpenOptions{Create: tt.create, ProbablyNew: tt.hint})
			if err != nil {
				t.Fatal(err)
			}
			seqs, err := h.Append(ctx, []history.Record{{ID: "new", Data: []byte("x")}})
			if err != nil {
				t.Fatal(err)
			}
			want := uint64(1)
			if tt.exists {
				want = 3
			}
			if len(seqs) != 1 || seqs[0] != want {
				t.Fatalf("appended at %v, want [%d]", seqs, want)
			}
			st := s.(*engine.Store).Stats()
			if st.Reads != tt.reads || st.Writes != tt.writes {
				t.Fatalf("Open + Append: %d reads, %d writes; want %d, %d", st.Reads, st.Writes, tt.reads, tt.writes)
			}
		})
	}
}

// A view that Open saw goes stale when another process appends before this handle's first
// append: the compare-and-swap refuses it, the handle reloads, and nothing is lost or reordered.
func TestOpenViewGoneStale(t *testing.T) {
	ctx := context.Background()
	a := memory.New(memory.Options{})
	h, err := a.Open(ctx, "c", history.OpenOptions{Create: true, ProbablyNew: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, memory.Reopen(a), "c", 2)
	seqs, err := h.Append(ctx, []history.Record{{ID: "mine", Data: []byte("m")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 1 || seqs[0] != 3 {
		t.Fatalf("appended at %v, want [3]", seqs)
	}
	page, err := h.Read(ctx, history.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(page.Entries))
	for _, e := range page.Entries {
		ids = append(ids, e.ID)
	}
	if got := fmt.Sprint(ids); got != "[r0 r1 mine]" {
		t.Fatalf("history holds %s, want [r0 r1 mine]", got)
	}
}

func appendN(t *testing.T, s history.Store, name string, n int) {
	t.Helper()
	ctx := context.Background()
	h, err := s.Open(ctx, name, history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := h.Append(ctx, []history.Record{{ID: fmt.Sprintf("r%d", i), Data: []byte("d")}}); err != nil {
			t.Fatal(err)
		}
	}
}

// JustCreated tells the opener of a history it created that the history is empty, until the
// first record committed through the handle; a history that existed (or that another handle
// created) does not report it.
func TestJustCreated(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name           string
		exists, create bool
		want           bool
	}{
		{name: "created by this Open", create: true, want: true},
		{name: "existing, Create", exists: true, create: true},
		{name: "existing, read", exists: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first := memory.New(memory.Options{})
			if tt.exists {
				appendN(t, first, "a", 2)
			}
			s := memory.Reopen(first)
			h, err := s.Open(ctx, "a", history.OpenOptions{Create: tt.create, ProbablyNew: tt.create})
			if err != nil {
				t.Fatal(err)
			}
			head, ok := history.JustCreated(h)
			if ok != tt.want {
				t.Fatalf("JustCreated = %v, %v; want %v", head, ok, tt.want)
			}
			if !ok {
				return
			}
			st := s.(*engine.Store).Stats()
			if read, err := h.Head(ctx); err != nil || read != head || st.Reads != 0 {
				t.Fatalf("JustCreated head %+v after %d reads; the index says %+v (%v)", head, st.Reads, read, err)
			}
			if _, err := h.Append(ctx, []history.Record{{ID: "m", Data: []byte("x")}}); err != nil {
				t.Fatal(err)
			}
			if head, ok := history.JustCreated(h); ok {
				t.Fatalf("JustCreated = %v after an append", head)
			}
		})
	}
}
