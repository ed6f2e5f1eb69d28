package journal

import (
	"context"
	"errors"
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/memory"
)

// A retried message must repeat its role and blocks; the check runs inside the store's commit.
func TestSameMessage(t *testing.T) {
	ctx := context.Background()
	h, err := memory.New(memory.Options{}).Open(ctx, "c", history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id, role, text string) history.Record {
		m := conversation.Message{ID: id, Role: conversation.Role(role), Blocks: []conversation.Block{{Type: conversation.BlockText, Text: text}}}
		r, err := MessageRecord(&m)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	opts := history.AppendOptions{Same: SameMessage}
	if _, err := h.AppendWith(ctx, []history.Record{rec("u1", "user", "hello")}, opts); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		batch    []history.Record
		conflict bool
	}{
		"the same message again":   {[]history.Record{rec("u1", "user", "hello")}, false},
		"other text":               {[]history.Record{rec("u1", "user", "bye")}, true},
		"another role":             {[]history.Record{rec("u1", "assistant", "hello")}, true},
		"a conflict in a batch":    {[]history.Record{rec("a1", "assistant", "new"), rec("u1", "user", "bye")}, true},
		"twice in one batch, same": {[]history.Record{rec("u2", "user", "x"), rec("u2", "user", "x")}, false},
		"twice in one batch, not":  {[]history.Record{rec("u3", "user", "x"), rec("u3", "user", "y")}, true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			before, _ := h.Head(ctx)
			_, err := h.AppendWith(ctx, tt.batch, opts)
			if tt.conflict != errors.Is(err, conversation.ErrConflict) {
				t.Fatalf("append: %v, conflict expected: %v", err, tt.conflict)
			}
			if after, _ := h.Head(ctx); tt.conflict && after.Sequence != before.Sequence {
				t.Fatalf("a refused batch moved the head from %d to %d", before.Sequence, after.Sequence)
			}
		})
	}
}
