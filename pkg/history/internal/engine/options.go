package engine

import "time"

// Options tune the engine for a backend. Zero fields take the defaults below.
type Options struct {
	// MaxObjectBytes is the largest object the backend accepts (encoded).
	MaxObjectBytes int
	// SealBytes: once the tail holds this many payload bytes it is sealed
	// into segments of at most MaxObjectBytes.
	SealBytes int64
	// MaxTailObjects: the tail is also sealed once it has this many objects,
	// which bounds the size of the index.
	MaxTailObjects int
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
}

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
	return o
}

// maxRecordBytes is the largest payload that fits one object with its line.
func (o Options) maxRecordBytes() int {
	// Base64 may be needed (4/3) plus the sequence, id and footer.
	return (o.MaxObjectBytes-footerSize-512)*3/4 - 4
}
