package history

import (
	"errors"
	"fmt"
)

// Errors returned by every backend. Test them with errors.Is: backends wrap
// them with context.
var (
	// ErrNotFound: the conversation, epoch, sequence range or checkpoint does not exist.
	ErrNotFound = errors.New("history: not found")
	// ErrConflict: another writer changed the history first (the caller's
	// expectation no longer holds), or the history already exists.
	ErrConflict = errors.New("history: conflict")
	// ErrTooLarge: a record, checkpoint or the whole history exceeds a limit of the backend.
	ErrTooLarge = errors.New("history: too large")
	// ErrCorrupt: stored bytes do not match their checksum or cannot be decoded.
	ErrCorrupt = errors.New("history: corrupt")
	// ErrUnavailable: the backend could not be reached or answered with a
	// transient failure. Retrying later may succeed; appends are idempotent by id.
	ErrUnavailable = errors.New("history: unavailable")
	// ErrInvalidRecord: the caller gave a record no store keeps (an id empty, longer than
	// MaxRecordIDBytes or not UTF-8). Nothing was written; no retry of the same record mends it.
	ErrInvalidRecord = errors.New("history: invalid record")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("history: store closed")
)

// MaxRecordIDBytes bounds a record id: ids are kept in memory for idempotency.
const MaxRecordIDBytes = 512

// IsRetryable reports whether retrying the same call later may succeed.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrConflict)
}

// ErrBusy: the read could not have the memory to decode the object in time, because other
// reads held the process's DecodeBudget. It is an ErrUnavailable: retrying later may succeed.
var ErrBusy = fmt.Errorf("%w: busy decoding other histories", ErrUnavailable)
