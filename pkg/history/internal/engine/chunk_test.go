package engine

import (
	"slices"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// A commit or a seal packs entries into as few objects as fit MaxObjectBytes (the lines and
// the footer the engine reserves), in order.
func TestChunk(t *testing.T) {
	entries := make([]history.Entry, 5)
	for i := range entries {
		entries[i] = history.Entry{Seq: uint64(i + 1), ID: "m", Data: binary(30)}
	}
	two := footerSize + lineSize(entries[0]) + lineSize(entries[1]) // the lines are all as long
	tests := map[string]struct {
		maxObject int
		want      []int // entries per object
	}{
		"lines that fill an object exactly share it": {two, []int{2, 2, 1}},
		"one byte less splits them":                  {two - 1, []int{1, 1, 1, 1, 1}},
		"a large object takes them all":              {1 << 20, []int{5}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			h := &log{opts: Options{MaxObjectBytes: tt.maxObject}}
			var got []int
			var seqs []uint64
			for _, c := range h.chunk(entries) {
				got = append(got, len(c))
				for _, e := range c {
					seqs = append(seqs, e.Seq)
				}
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5}) {
				t.Fatalf("objects of %v entries (sequences %v), want %v", got, seqs, tt.want)
			}
		})
	}
}
