package engine

import (
	"time"

	"github.com/parley-dev/parley/pkg/history"
)

// Options tune the engine for a backend. Zero fields take the defaults below.
type Options struct {
	// MaxObjectBytes is the largest object the backend accepts (encoded).
	MaxObjectBytes int
	// SealBytes: once the unsealed tail (tail objects and open entries) holds this many
	// bytes it is sealed into segments of at most MaxObjectBytes.
	SealBytes int64
	// MaxTailObjects: the tail is also sealed once it has this many pieces (tail objects
	// and open entries), which bounds the size of the index.
	MaxTailObjects int
	// MaxOpenBytes bounds the encoded entries the index carries itself (the open tail).
	// An append whose entries fit goes into the index: one request. A larger one writes a
	// tail object first. Sealing starts in the background once the open tail is half full.
	MaxOpenBytes int
	// CompressSegments gzips sealed segments (tail objects stay plain: they
	// are small and short-lived).
	CompressSegments bool
	// MaxHistoryBytes caps the payload bytes of all retained epochs; 0: no cap.
	MaxHistoryBytes int64
	// TooLargeHint is appended to ErrTooLarge errors (e.g. "use objectStore").
	TooLargeHint string
	// MaxBatchRecords and MaxBatchBytes cap one group commit.
	MaxBatchRecords int
	MaxBatchBytes   int64
	// Linger waits this long before a commit to gather more appends; 0 relies
	// on the batching that happens while the previous commit is in flight.
	Linger time.Duration
	// OpTimeout bounds one commit; the commit does not use a caller's context
	// because it acknowledges many callers at once.
	OpTimeout time.Duration
	// MaxAttempts bounds compare-and-swap retries of one commit.
	MaxAttempts int
	// DecodeBudget bounds the memory decodes of stored objects take at once; share one
	// between the stores of a process. Nil: a budget of history.DefaultDecodeBudget of this
	// store's own.
	DecodeBudget *history.DecodeBudget
}

// DefaultMaxOpenBytes bounds the open tail when a backend sets no bound: 32 messages of
// 1 KiB fit, and the index stays far below a ConfigMap's 1 MiB.
const DefaultMaxOpenBytes = 64 << 10

func (o Options) withDefaults() Options {
	if o.MaxObjectBytes == 0 {
		o.MaxObjectBytes = 16 << 20
	}
	if o.SealBytes == 0 {
		o.SealBytes = 1 << 20
	}
	if o.MaxTailObjects == 0 {
		o.MaxTailObjects = 32
	}
	if o.MaxOpenBytes == 0 {
		o.MaxOpenBytes = DefaultMaxOpenBytes
	}
	if o.MaxBatchRecords == 0 {
		o.MaxBatchRecords = 1024
	}
	if o.MaxBatchBytes == 0 {
		o.MaxBatchBytes = 8 << 20
	}
	if o.OpTimeout == 0 {
		o.OpTimeout = 30 * time.Second
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 64
	}
	if o.DecodeBudget == nil {
		o.DecodeBudget = history.NewDecodeBudget(history.DefaultDecodeBudget, 0)
	}
	return o
}

// maxRecordBytes is the largest payload that fits one object with its line.
func (o Options) maxRecordBytes() int {
	// Base64 may be needed (4/3) plus the sequence, id and footer.
	return (o.MaxObjectBytes-footerSize-512)*3/4 - 4
}
