package journal

import (
	"fmt"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// SameMessage is a history.AppendOptions.Same for message records: a retried append of a
// message id the epoch holds must repeat its role and blocks; anything else is refused with
// an error wrapping conversation.ErrConflict. The store asks it inside the commit, so the
// answer cannot be overtaken by another writer. Records of other kinds are idempotent by id
// alone, as with a plain Append.
func SameMessage(stored history.Entry, rec history.Record) error {
	old, err := decode(stored)
	if err != nil {
		return err
	}
	again, err := decode(history.Entry{Seq: stored.Seq, ID: rec.ID, Data: rec.Data})
	if err != nil {
		return err
	}
	if old.Kind != KindMessage || again.Kind != KindMessage || old.Message == nil || again.Message == nil {
		return nil
	}
	probe := conversation.NewState("")
	probe.Messages = []conversation.Message{*old.Message}
	if _, err := probe.AppendMessage(*again.Message); err != nil {
		return fmt.Errorf("message id %s is already stored with other content: %w", again.Message.ID, err)
	}
	return nil
}
