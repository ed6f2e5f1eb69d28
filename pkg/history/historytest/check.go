package historytest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

func records(prefix string, from, n int) []history.Record {
	out := make([]history.Record, n)
	for i := range out {
		id := fmt.Sprintf("%s-%d", prefix, from+i)
		out[i] = history.Record{ID: id, Data: payload(id)}
	}
	return out
}

func mustAppend(t *testing.T, h history.History, recs []history.Record) []uint64 {
	t.Helper()
	seqs, err := h.Append(context.Background(), recs)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if len(seqs) != len(recs) {
		t.Fatalf("append returned %d sequences for %d records", len(seqs), len(recs))
	}
	return seqs
}

func readAll(t *testing.T, h history.History, epoch uint64) []history.Entry {
	t.Helper()
	var out []history.Entry
	for e, err := range history.All(context.Background(), h, epoch, 1) {
		if err != nil {
			t.Fatalf("read epoch %d: %v", epoch, err)
		}
		out = append(out, e)
	}
	return out
}

// checkLog asserts the invariants of an epoch: sequences 1..n without gaps,
// every id once, every acknowledged id at the sequence it was acknowledged
// with, and payloads intact.
func checkLog(t *testing.T, entries []history.Entry, acks map[string]uint64) map[string]uint64 {
	t.Helper()
	seen := map[string]uint64{}
	for i, e := range entries {
		if e.Seq != uint64(i+1) {
			t.Fatalf("entry %d has sequence %d: want gap-free sequences from 1", i, e.Seq)
		}
		if prev, dup := seen[e.ID]; dup {
			t.Fatalf("id %s stored twice, at %d and %d", e.ID, prev, e.Seq)
		}
		seen[e.ID] = e.Seq
		if !bytes.Equal(e.Data, payload(e.ID)) {
			t.Fatalf("entry %d (%s): data %q is not what was appended", e.Seq, e.ID, e.Data)
		}
	}
	lost := 0
	for id, seq := range acks {
		got, ok := seen[id]
		if !ok {
			lost++
			t.Errorf("acknowledged %s (sequence %d) is missing", id, seq)
		} else if got != seq {
			t.Errorf("acknowledged %s at sequence %d, stored at %d", id, seq, got)
		}
	}
	if lost > 0 {
		t.Fatalf("%d acknowledged records lost", lost)
	}
	return seen
}
