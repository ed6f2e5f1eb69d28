package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/history"
)

// RewriteAttempts bounds the reads and plans of one Rewrite while other rewrites move the
// history under it.
const RewriteAttempts = 3

// ErrKeptMoving reports that every attempt of a Rewrite lost its swap to another rewrite of
// the epoch it had read; nothing was written. It is a history.ErrConflict.
var ErrKeptMoving = fmt.Errorf("%w: the history kept moving during %d attempts", history.ErrConflict, RewriteAttempts)

// Epoch is a planned new epoch.
type Epoch struct {
	// Records open the new epoch (sequence 1 onwards); an empty epoch has none.
	Records []history.Record
	// Counts are the token counts of Records' messages by id, when the plan made them: the
	// view of the new epoch is seeded from them instead of counting those messages again.
	Counts map[string]int
}

// Plan decides the epoch that replaces the one snap holds. It runs without the view's lock
// (a compaction may call a model for a minute) on a copy nothing else changes. A nil Epoch
// writes nothing (already done, or nothing to do); an error ends the Rewrite with it.
type Plan func(ctx context.Context, snap *journal.Snapshot) (*Epoch, error)

// Rewritten is what a Rewrite did.
type Rewritten struct {
	// Head is the new epoch's head; when nothing was written, the epoch and sequence read.
	Head history.Head
	// Written is true when a new epoch replaced the live one.
	Written bool
}

// WriteError is a failure of the swap itself (not a conflict): Epoch is the epoch that was
// being written. Its message is Err's.
type WriteError struct {
	Epoch uint64
	Err   error
}

func (e *WriteError) Error() string { return e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// Rewrite replaces the live epoch with one planned from it, the one protocol of compaction,
// reset and archive (each takes its Checkpoint first, so the epoch it replaces stays readable):
// read the view, plan the new epoch from a snapshot of it, swap it in by compare-and-swap, and
// seed the view of the new epoch from the planned records. The Live must be opened.
//
// A rewrite never loses an acknowledged message. The swap names the epoch and the last
// sequence the plan read (history.EpochRequest Epoch and Through): the store carries every
// entry appended after that sequence into the new epoch, after the planned records, so an
// append acknowledged while the plan ran is kept as it was. A swap that finds another epoch
// current (another rewrite won: a compaction, a reset, another replica) fails with
// history.ErrConflict and is never forced: the new epoch is read and planned again, so what
// the winner wrote is this rewrite's input. After RewriteAttempts such losses it gives up
// with ErrKeptMoving, having written nothing.
//
// Errors are the view's read errors, the plan's own, a *WriteError, or ErrKeptMoving.
func (l *Live) Rewrite(ctx context.Context, plan Plan) (Rewritten, error) {
	for range RewriteAttempts {
		var snap *journal.Snapshot
		if err := l.With(ctx, func(v *journal.View) error { snap = v.Snapshot(); return nil }); err != nil {
			return Rewritten{}, err
		}
		if snap == nil {
			return Rewritten{}, errors.New("session: the view counts no tokens and cannot be snapshot")
		}
		epoch, err := plan(ctx, snap)
		if err != nil {
			return Rewritten{}, err
		}
		if epoch == nil {
			return Rewritten{Head: history.Head{Epoch: snap.Epoch, Sequence: snap.Sequence}}, nil
		}
		head, err := l.h.NewEpoch(ctx, history.EpochRequest{Epoch: snap.Epoch, Through: snap.Sequence, Records: epoch.Records})
		if errors.Is(err, history.ErrConflict) {
			continue // another rewrite moved the epoch: read it and plan again
		}
		if err != nil {
			return Rewritten{}, &WriteError{Epoch: snap.Epoch + 1, Err: err}
		}
		// The next read then finds only the entries carried after Through. Best effort: a view
		// that cannot be seeded is rebuilt from the store by the next read.
		_ = l.Seed(head.Epoch, epoch.Records, epoch.Counts)
		return Rewritten{Head: head, Written: true}, nil
	}
	return Rewritten{}, ErrKeptMoving
}
