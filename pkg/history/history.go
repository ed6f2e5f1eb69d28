package history

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Record is one message as the caller encoded it. The store never looks
// inside Data; ID makes appends idempotent.
type Record struct {
	ID   string
	Data []byte
}

// Entry is a stored record with the sequence number the store assigned.
type Entry struct {
	Seq  uint64
	ID   string
	Data []byte
}

// Head summarises the current epoch. Sequence is the last assigned sequence
// number, which is also the number of messages: sequences are gap-free from 1.
type Head struct {
	Epoch    uint64
	Sequence uint64
	Bytes    int64
}

// Digest names a checkpoint: "sha256:" followed by 64 lowercase hex digits.
type Digest string

// OpenOptions control Store.Open.
type OpenOptions struct {
	// Create makes Open create an empty history when none exists; otherwise
	// Open returns ErrNotFound for a missing history.
	Create bool
	// Owner, when set, is put on every in-cluster object of the history so the
	// Kubernetes garbage collector removes them with their owner. Backends
	// outside the cluster ignore it. A shared handle opened without an owner
	// takes the first one a later Open gives.
	Owner *metav1.OwnerReference
	// ProbablyNew, with Create, hints that the history most likely does not
	// exist yet: Open then tries to create it before reading, which saves
	// the read that would find nothing. It changes only the order of the
	// requests: an existing history is still opened (its create is refused,
	// then it is read), at the cost of that refused create.
	ProbablyNew bool
}

// AppendOptions control History.AppendWith.
type AppendOptions struct {
	// Same, when set, is asked inside the commit about every record whose id the epoch
	// already holds (or an earlier record of the same commit holds): stored is the entry
	// under that id. When it returns an error, the Append fails with that error and none of
	// its records is stored. It is decided with the commit, so no other writer can store the
	// id in between; it may be called more than once (each commit attempt asks again) and
	// must not block.
	Same func(stored Entry, rec Record) error
}

// Appended is what an append committed.
type Appended struct {
	// Epoch is the epoch the records are in.
	Epoch uint64
	// Sequences are the records' sequence numbers, in the order given.
	Sequences []uint64
	// Head is the epoch's head as the commit that stored the records left it (as the writer
	// last saw it when every record was already stored): a caller that folds what it appended
	// needs no Head call to learn where the history stands. Other writers may have moved it since.
	Head Head
}

// JustCreated reports the head of a history whose index h's Open created, as long as no
// record has been committed through h since: the caller that set the history up knows it is
// empty without reading it. Another process may append meanwhile only if something else lets
// it; a caller that folds its own first append checks the head the append answers
// (Appended.Head). False when h's backend does not tell.
func JustCreated(h History) (Head, bool) {
	if c, ok := h.(interface{ JustCreated() (Head, bool) }); ok {
		return c.JustCreated()
	}
	return Head{}, false
}

// ReadOptions select a page of entries.
type ReadOptions struct {
	// Epoch to read; 0 means the current epoch.
	Epoch uint64
	// From is the first sequence number wanted; 0 means 1.
	From uint64
	// Limit caps the number of entries returned; 0 means 1000.
	Limit int
}

// Page is one page of a Read.
type Page struct {
	Epoch   uint64
	Entries []Entry
	// Head is the current epoch's head in the index the page was read from: a reader that
	// follows the history learns where it stands from the same read as the entries.
	Head Head
	// Next is the sequence to pass as From for the next page; 0 when the page
	// reached the end of the epoch as it was when the page was read.
	Next uint64
}

// EpochRequest replaces the current epoch after compaction.
type EpochRequest struct {
	// Epoch the compaction read; ErrConflict when the current epoch differs.
	Epoch uint64
	// Through is the last sequence the compaction folded into Records.
	// Entries appended after it are carried into the new epoch, after
	// Records, with their ids, so no acknowledged append is dropped.
	Through uint64
	// Records start the new epoch (sequence 1 onwards).
	Records []Record
}

// Retention says what Retain keeps. The current epoch is always kept.
type Retention struct {
	// KeepEpochs is how many epochs before the current one to keep.
	KeepEpochs int
	// KeepCheckpoint reports whether to keep a checkpoint; nil keeps them all.
	KeepCheckpoint func(Digest) bool
}

// Usage reports what one conversation occupies in the backend.
type Usage struct {
	Head Head
	// Epochs counts the retained epochs, the current one included.
	Epochs int
	// Objects counts the backend objects (ConfigMaps or S3 objects) of the
	// history, the index and checkpoints included.
	Objects int
	// StoredBytes sums the sizes of those objects.
	StoredBytes int64
	// Checkpoints counts the stored checkpoints.
	Checkpoints int
}

// Store holds the histories of many conversations.
type Store interface {
	// Open returns the history of a conversation. Handles are shared: opening
	// the same name twice returns the same History, so concurrent appends of
	// one process are committed together (group commit).
	Open(ctx context.Context, name string, opts OpenOptions) (History, error)
	// Delete removes everything the conversation stored: every epoch and
	// checkpoint. Deleting a missing history is not an error.
	Delete(ctx context.Context, name string) error
	// Release drops this process's handle of a conversation (its id cache
	// and commit queue) to free memory once the conversation is idle; the
	// next Open starts afresh. Appends still queued on the released handle
	// fail with ErrClosed.
	Release(name string)
	// Close stops background work; pending appends fail with ErrClosed.
	Close() error
}

// History is the append-only log of one conversation. It is safe for
// concurrent use, from several goroutines and from several processes.
type History interface {
	// Append stores records in order and returns their sequence numbers. A
	// record whose id the current epoch already holds is not stored again:
	// its existing sequence number is returned. When Append returns nil the
	// records are durable. When ctx ends first the records may or may not be
	// stored; retry with the same ids.
	Append(ctx context.Context, records []Record) ([]uint64, error)
	// AppendWith is Append with options, answering the epoch the records landed in too.
	AppendWith(ctx context.Context, records []Record, opts AppendOptions) (Appended, error)
	// Read returns a page of entries in sequence order.
	Read(ctx context.Context, opts ReadOptions) (Page, error)
	// Head reads the current epoch's head from the backend.
	Head(ctx context.Context) (Head, error)
	// NewEpoch atomically replaces the current epoch; see EpochRequest.
	NewEpoch(ctx context.Context, req EpochRequest) (Head, error)
	// PutCheckpoint stores an immutable snapshot and returns its digest.
	PutCheckpoint(ctx context.Context, data []byte) (Digest, error)
	// GetCheckpoint returns a snapshot after verifying its digest
	// (ErrCorrupt when the stored bytes do not match).
	GetCheckpoint(ctx context.Context, digest Digest) ([]byte, error)
	// Checkpoints lists the stored checkpoint digests.
	Checkpoints(ctx context.Context) ([]Digest, error)
	// Retain deletes epochs and checkpoints the policy does not keep, and
	// leftovers of writers that crashed.
	Retain(ctx context.Context, policy Retention) error
	// Usage reports the space the history occupies.
	Usage(ctx context.Context) (Usage, error)
}
