package journal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// flakyHistory records the batches appended and fails the failAt-th Append (1-based), before
// storing it or after (the acknowledgement lost).
type flakyHistory struct {
	history.History
	batches    [][]string
	failAt     int
	afterStore bool
}

var errInjected = errors.New("injected append failure")

func (f *flakyHistory) AppendWith(ctx context.Context, records []history.Record, opts history.AppendOptions) (history.Appended, error) {
	ids := make([]string, 0, len(records))
	for _, r := range records {
		ids = append(ids, r.ID)
	}
	f.batches = append(f.batches, ids)
	if len(f.batches) != f.failAt {
		return f.History.AppendWith(ctx, records, opts)
	}
	if f.afterStore {
		if _, err := f.History.AppendWith(ctx, records, opts); err != nil {
			return history.Appended{}, err
		}
	}
	return history.Appended{}, errInjected
}

func sized(id string, n int) history.Record {
	return history.Record{ID: id, Data: []byte(strings.Repeat("x", n))}
}

func recordIDs(records []history.Record) []string {
	ids := make([]string, 0, len(records))
	for _, r := range records {
		ids = append(ids, r.ID)
	}
	return ids
}

func TestAppendAllBatches(t *testing.T) {
	const kib = 1 << 10
	tests := map[string]struct {
		sizes       []int
		wantBatches []int // records per Append
	}{
		"nothing: no append":        {},
		"one small record":          {sizes: []int{10}, wantBatches: []int{1}},
		"exactly the limit":         {sizes: []int{128 * kib, 128 * kib}, wantBatches: []int{2}},
		"one byte over the limit":   {sizes: []int{128 * kib, 128*kib + 1}, wantBatches: []int{1, 1}},
		"a record above the limit":  {sizes: []int{10, 300 * kib, 10}, wantBatches: []int{1, 1, 1}},
		"many records in order":     {sizes: slices.Repeat([]int{100 * kib}, 7), wantBatches: []int{2, 2, 2, 1}},
		"small ones fill the batch": {sizes: append(slices.Repeat([]int{kib}, 300), kib), wantBatches: []int{256, 45}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			records := make([]history.Record, 0, len(tc.sizes))
			for i, n := range tc.sizes {
				records = append(records, sized(fmt.Sprintf("r%03d", i), n))
			}
			h := &flakyHistory{History: newHistory(t)}
			seqs := appendAll(t, h, records...)
			got := make([]int, 0, len(h.batches))
			var ids []string
			for _, b := range h.batches {
				got = append(got, len(b))
				ids = append(ids, b...)
			}
			if !slices.Equal(got, tc.wantBatches) {
				t.Errorf("batches of %v records, want %v", got, tc.wantBatches)
			}
			if !slices.Equal(ids, recordIDs(records)) {
				t.Error("records appended out of order")
			}
			for i := range h.batches {
				size := 0
				for _, id := range h.batches[i] {
					size += tc.sizes[slices.Index(recordIDs(records), id)]
				}
				if size > maxBatchBytes && len(h.batches[i]) > 1 {
					t.Errorf("batch %d holds %d bytes in %d records", i, size, len(h.batches[i]))
				}
			}
			for i, seq := range seqs {
				if seq != uint64(i+1) {
					t.Fatalf("sequences %v, want 1..%d", seqs, len(records))
				}
			}
			if len(seqs) != len(records) {
				t.Errorf("%d sequences for %d records", len(seqs), len(records))
			}
		})
	}
}

// An initialisation interrupted mid-way (the manager died, the store failed) is repeated
// whole with the marker: every record ends up stored once, in order, and the view is the
// seed.
func TestAppendAllInterruptedImport(t *testing.T) {
	seed := bigSeed()
	records := append(stateRecords(t, &seed, "seed:"), mustRecord(t)(InitializedRecord()))
	for _, afterStore := range []bool{false, true} {
		t.Run(fmt.Sprintf("stored before the failure: %v", afterStore), func(t *testing.T) {
			h := &flakyHistory{History: newHistory(t), failAt: 2, afterStore: afterStore}
			got, err := AppendAll(t.Context(), h, records[:len(records)-1])
			seqs := got.Sequences
			if !errors.Is(err, errInjected) {
				t.Fatalf("first attempt: %v, want the injected failure", err)
			}
			if len(seqs) != len(h.batches[0]) {
				t.Errorf("first attempt reported %d sequences, its first batch held %d", len(seqs), len(h.batches[0]))
			}
			if len(h.batches) != 2 {
				t.Fatalf("the first attempt went on after the failure: %d appends", len(h.batches))
			}

			got, err = AppendAll(t.Context(), h, records)
			if err != nil {
				t.Fatal(err)
			}
			seqs = got.Sequences
			entries := readAll(t, h.History)
			stored := make([]string, 0, len(entries))
			for i, e := range entries {
				stored = append(stored, e.ID)
				if e.Seq != uint64(i+1) || seqs[i] != e.Seq {
					t.Errorf("entry %d: sequence %d, reported %d", i, e.Seq, seqs[i])
				}
			}
			if !slices.Equal(stored, recordIDs(records)) {
				t.Fatalf("stored %d records %v\nwant %d %v", len(stored), stored, len(records), recordIDs(records))
			}
			v := fold(t, nil, entries)
			if !v.Initialized {
				t.Error("the marker was not read")
			}
			sameParts(t, &v.State, &seed)
		})
	}
}

// bigSeed is a seed large enough to take several appends.
func bigSeed() conversation.State {
	s := conversation.NewState("")
	msgs := make([]conversation.Message, 0, 24)
	for i := range 24 {
		role := conversation.RoleUser
		if i%2 == 1 {
			role = conversation.RoleAssistant
		}
		msgs = append(msgs, msg(fmt.Sprintf("m%02d", i), role, text(strings.Repeat(fmt.Sprintf("line %d of a long message\n", i), 1500))))
	}
	s.Messages = numbered(msgs...)
	return s
}
