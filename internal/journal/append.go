package journal

import (
	"context"

	"github.com/parley-dev/parley/pkg/history"
)

// maxBatchBytes bounds one Append: well under the smallest backend object (a ConfigMap tail
// holds about 900 KiB), so a large import becomes several commits instead of ErrTooLarge.
const maxBatchBytes = 256 << 10

// AppendAll appends records in order, in batches of at most maxBatchBytes, and returns their
// sequence numbers. Record ids make it safe to call again after a failure: records already
// stored keep their sequence and are not written twice.
func AppendAll(ctx context.Context, h history.History, records []history.Record) ([]uint64, error) {
	seqs := make([]uint64, 0, len(records))
	for start := 0; start < len(records); {
		end, size := start, 0
		for end < len(records) && (end == start || size+len(records[end].Data) <= maxBatchBytes) {
			size += len(records[end].Data)
			end++
		}
		got, err := h.Append(ctx, records[start:end])
		if err != nil {
			return seqs, err
		}
		seqs = append(seqs, got...)
		start = end
	}
	return seqs, nil
}
