package engine

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/parley-dev/parley/pkg/history"
)

// Stored bytes are untrusted: whoever can write the bucket or the ConfigMaps (and, on S3,
// whoever runs the endpoint) chooses them. Nothing the engine reads may grow past what the
// engine itself writes, so one hostile history costs a bounded amount of memory and fails with
// ErrCorrupt instead of taking the process down:
//
//   - a backend reads at most ReadLimit(MaxObjectBytes) bytes of an object and refuses a longer
//     one without reading the rest (the S3 and ConfigMap backends; boundedObjects checks every
//     backend's answer again);
//   - a compressed segment whose gzip trailer declares a size past the limit is refused before
//     it is inflated, and inflation stops at the limit whatever the trailer says (codec.go);
//   - inflation also stops at the size the trailer declares: an honest segment inflates to
//     exactly that, so a bomb that hides its size is refused once it passes it;
//   - segments are decoded as they inflate, line by line: the whole inflated object is never
//     held next to its entries, and a segment holds no more entries than its key names;
//   - every decode first takes what it may hold (decodeCost) from the process's
//     history.DecodeBudget, so reads at once, hostile or not, hold no more than the budget.
//
// The format carries no digest of the compressed bytes (the footer's checksum covers the
// lines), so the declared size is the only check possible before inflating.

// readLimitMargin: an object the engine writes may pass MaxObjectBytes by a little. The record
// bound (maxRecordBytes) leaves room for an id as long as history.MaxRecordIDBytes, but JSON
// may escape each byte of it to six (TestLargestRecordWithTheLongestID writes that object), and the footer
// follows. 64 KiB covers that overhead many times over.
const readLimitMargin = 64 << 10

// ReadLimit is the most bytes an object can hold in a store whose objects are at most
// maxObjectBytes: no object the engine writes is longer, and no segment it seals inflates past
// it. Backends refuse to read more (ErrCorrupt).
func ReadLimit(maxObjectBytes int) int64 { return int64(maxObjectBytes) + readLimitMargin }

func (o Options) readLimit() int64 { return ReadLimit(o.MaxObjectBytes) }

// ErrObjectTooLong is the error of a backend asked to read an object longer than limit.
func ErrObjectTooLong(key string, limit int64) error {
	return fmt.Errorf("%w: %s holds more than %d bytes, more than this store ever writes", history.ErrCorrupt, key, limit)
}

// boundedBackend checks every object a backend returns against the read limit, for backends
// that do not bound their reads themselves (the in-memory one).
type boundedBackend struct {
	Backend
	limit int64
}

func (b boundedBackend) Objects(name string, owner *metav1.OwnerReference) (Objects, error) {
	o, err := b.Backend.Objects(name, owner)
	if err != nil {
		return nil, err
	}
	return boundedObjects{Objects: o, limit: b.limit}, nil
}

type boundedObjects struct {
	Objects
	limit int64
}

func (o boundedObjects) Get(ctx context.Context, key string) ([]byte, string, error) {
	data, ver, err := o.Objects.Get(ctx, key)
	if err == nil && int64(len(data)) > o.limit {
		return nil, "", ErrObjectTooLong(key, o.limit)
	}
	return data, ver, err
}

// decodeCost is the most memory decoding an object may hold at once: its stored bytes, the
// longest line gathered whole (at most what the object inflates to, bound), and the entries
// decoded (their bytes, at most bound, and each entry's own overhead, at most entries of them).
func decodeCost(stored int, bound int64, entries uint64) int64 {
	return int64(stored) + 2*bound + int64(min(entries, uint64(bound)))*entryOverhead
}

// manifestCost is the most memory decoding an index object may hold: its bytes, and the
// decoded manifest, at most a few times as much (open entries are copied out of it once).
func manifestCost(stored int) int64 { return 3 * int64(stored) }
