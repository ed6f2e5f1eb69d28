package historystore

import (
	"context"
	"errors"
	"fmt"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/s3"
)

// Error is a failure to reach a Conversation's history, with the condition reason that names
// its cause and a message a person can act on. Messages never hold credentials.
type Error struct {
	// Reason is one of the HistoryAvailable reasons of api/v1alpha1.
	Reason string
	// Message says what is wrong and what to do.
	Message string
	// Err is the underlying error, when there is one.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Reason returns the condition reason of any error from this package or from a history:
// typed history errors map to their reasons, anything else is StoreError.
func Reason(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Reason
	case errors.Is(err, s3.ErrConditionalWritesUnsupported):
		return parleyv1alpha1.ReasonConditionalWritesUnsupported
	case errors.Is(err, history.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return parleyv1alpha1.ReasonStoreUnavailable
	case errors.Is(err, history.ErrTooLarge):
		return parleyv1alpha1.ReasonHistoryTooLarge
	case errors.Is(err, history.ErrCorrupt):
		return parleyv1alpha1.ReasonHistoryCorrupt
	default:
		return parleyv1alpha1.ReasonStoreError
	}
}

// Lasting reports whether a history error does not mend by itself: stored bytes that failed
// verification (a corrupt or hostile history) or a history at its size cap. Retrying soon would
// only read the same bytes again; a change of the spec, or of the bytes, is what helps.
func Lasting(err error) bool {
	switch Reason(err) {
	case parleyv1alpha1.ReasonHistoryCorrupt, parleyv1alpha1.ReasonHistoryTooLarge:
		return true
	default:
		return false
	}
}

// Permanent reports whether a history error holds for as long as the spec does: nothing but a
// change of the spec (which brings a reconcile of its own) can mend it, so it is not retried. A
// fork whose Checkpoint belongs to another conversation than spec.forkFrom.conversation is one
// (forkFrom is immutable: the Conversation must be re-created).
func Permanent(err error) bool {
	return Reason(err) == parleyv1alpha1.ReasonForkSourceMismatch
}

// Message is the human part of err for a condition: the Error's message, or the error itself.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) {
		if e.Err != nil {
			return e.Message + ": " + e.Err.Error()
		}
		return e.Message
	}
	return err.Error()
}

func errorf(reason string, err error, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...), Err: err}
}
