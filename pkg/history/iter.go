package history

import (
	"context"
	"iter"
)

// All streams the entries of an epoch (0: the current one) from sequence
// from onwards, page by page. It stops at the first error, which it yields.
func All(ctx context.Context, h History, epoch, from uint64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		opts := ReadOptions{Epoch: epoch, From: from}
		for {
			page, err := h.Read(ctx, opts)
			if err != nil {
				yield(Entry{}, err)
				return
			}
			for _, e := range page.Entries {
				if !yield(e, nil) {
					return
				}
			}
			if page.Next == 0 {
				return
			}
			// Pin the epoch of the first page so a compaction mid-stream does
			// not splice two epochs together.
			opts = ReadOptions{Epoch: page.Epoch, From: page.Next}
		}
	}
}
