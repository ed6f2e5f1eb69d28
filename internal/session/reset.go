package session

import (
	"context"
	"time"

	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/conversation"
)

// Reset asks for the reset of a conversation's history (POST …/reset), once its Reset
// Checkpoint is Ready.
type Reset struct {
	// ID identifies the request (journal.Reset.ID): a reset of the same id already written is
	// answered instead of clearing again.
	ID string
	// Checkpoint names the Reset Checkpoint and Held is the state its snapshot holds: only what
	// Held holds as it is now is cleared (journal.ResetState).
	Checkpoint string
	Held       *conversation.State
	// KeepSystem keeps the system prompt.
	KeepSystem bool
	// Time is when the reset was asked for.
	Time time.Time
}

// UnencodableError reports that the state a reset leaves cannot be encoded as records.
type UnencodableError struct{ Err error }

func (e *UnencodableError) Error() string { return e.Err.Error() }
func (e *UnencodableError) Unwrap() error { return e.Err }

// ResetDone reports the reset of id that wrote the current epoch, if it did: a reset whose
// epoch was written but not yet answered (the replica died in between) is found by the
// epoch's first record. A history that cannot be read reports none.
func (l *Live) ResetDone(ctx context.Context, id string) (journal.Reset, bool) {
	var done journal.Reset
	found := false
	_ = l.With(ctx, func(v *journal.View) error {
		if v.LastReset != nil && v.LastReset.ID == id {
			done, found = *v.LastReset, true
		}
		return nil
	})
	return done, found
}

// Reset clears the history into a new epoch by Rewrite: it holds the session fields, the
// system prompt when asked, and whatever Held does not hold as it is now, so nothing
// acknowledged is removed that the Checkpoint does not keep. It returns the record of the
// epoch, or that of the same request when an earlier try wrote it. Errors are Rewrite's, or
// an *UnencodableError.
func (l *Live) Reset(ctx context.Context, req Reset) (journal.Reset, error) {
	var out journal.Reset
	_, err := l.Rewrite(ctx, func(_ context.Context, snap *journal.Snapshot) (*Epoch, error) {
		if snap.LastReset != nil && snap.LastReset.ID == req.ID {
			out = *snap.LastReset
			return nil, nil
		}
		state, cleared := journal.ResetState(&snap.State, req.Held, req.KeepSystem)
		out = journal.Reset{
			ID: req.ID, Time: req.Time, Checkpoint: req.Checkpoint, FromEpoch: snap.Epoch, Through: snap.Sequence,
			KeepSystem: req.KeepSystem, Cleared: cleared, Kept: len(state.Messages),
		}
		records, err := journal.ResetRecords(&out, &state, snap.Epoch+1)
		if err != nil {
			return nil, &UnencodableError{Err: err}
		}
		return &Epoch{Records: records}, nil
	})
	return out, err
}
