package journal

import (
	"context"

	"github.com/parley-dev/parley/pkg/history"
)

// maxBatchBytes bounds one Append: well under the smallest backend object (a ConfigMap tail
// holds about 900 KiB), so a large import becomes several commits instead of ErrTooLarge.
const maxBatchBytes = 256 << 10

// AppendAll appends records in order, in batches of at most maxBatchBytes, and returns their
// sequence numbers, the epoch and the head the last batch left. Record ids make it safe to call
// again after a failure: records already stored keep their sequence and are not written twice.
func AppendAll(ctx context.Context, h history.History, records []history.Record) (history.Appended, error) {
	all := history.Appended{Sequences: make([]uint64, 0, len(records))}
	for start := 0; start < len(records); {
		end, size := start, 0
		for end < len(records) && (end == start || size+len(records[end].Data) <= maxBatchBytes) {
			size += len(records[end].Data)
			end++
		}
		got, err := h.AppendWith(ctx, records[start:end], history.AppendOptions{})
		if err != nil {
			return all, err
		}
		all.Sequences = append(all.Sequences, got.Sequences...)
		all.Epoch, all.Head = got.Epoch, got.Head
		start = end
	}
	return all, nil
}
