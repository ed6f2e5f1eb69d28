package journal

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
	"github.com/parley-dev/parley/pkg/history"
)

// failingHead fails Head while fail is set.
type failingHead struct {
	history.History
	fail bool
}

func (f *failingHead) Head(ctx context.Context) (history.Head, error) {
	if f.fail {
		return history.Head{}, history.ErrUnavailable
	}
	return f.History.Head(ctx)
}

func TestViews(t *testing.T) {
	m := msg("u1", conversation.RoleUser, text("hello there"))
	record := mustRecord(t)(MessageRecord(&m))
	inner := &countingHistory{History: newHistory(t)}
	h := &failingHead{History: inner}
	appendAll(t, h, record)

	var vs Views
	now := time.Unix(0, 0)
	vs.clock = func() time.Time { now = now.Add(time.Second); return now }
	var seen *View
	with := func(key, session, tokenizer string) error {
		return vs.With(t.Context(), key, session, tokenizer, h, func(v *View) error { seen = v; return nil })
	}

	if err := with("k", "s1", tokens.Cl100kBase); err != nil {
		t.Fatal(err)
	}
	first := seen
	if first.Messages() != 1 || first.Tokens() == 0 {
		t.Fatalf("view %d messages %d tokens", first.Messages(), first.Tokens())
	}
	inner.entries = 0
	if err := with("k", "s1", tokens.Cl100kBase); err != nil || seen != first || inner.entries != 0 {
		t.Errorf("second use: err %v, same view %v, %d entries read", err, seen == first, inner.entries)
	}
	if err := with("k", "s1", tokens.Approximate); err != nil || seen == first || seen.Tokens() == first.Tokens() {
		t.Errorf("another tokenizer: err %v, rebuilt %v, tokens %d and %d", err, seen != first, seen.Tokens(), first.Tokens())
	}
	byApprox := seen
	if err := with("k", "s2", tokens.Approximate); err != nil || seen == byApprox || seen.State.SessionID != "s2" {
		t.Errorf("another session: err %v, rebuilt %v", err, seen != byApprox)
	}
	if err := with("k", "s2", "no-such-tokenizer"); err == nil {
		t.Error("an unknown tokenizer was accepted")
	}

	// A failed refresh is not trusted: the next use rebuilds the view.
	before := seen
	h.fail = true
	if err := with("k", "s2", tokens.Approximate); !errors.Is(err, history.ErrUnavailable) {
		t.Errorf("refresh error %v", err)
	}
	h.fail = false
	if err := with("k", "s2", tokens.Approximate); err != nil || seen == before {
		t.Errorf("after a failed refresh: err %v, rebuilt %v", err, seen != before)
	}

	// Past the budget the least recently used views go, never the one in use.
	size := seen.Bytes
	vs.Budget = 2 * size
	for _, key := range []string{"a", "b", "c"} {
		if err := with(key, "s", tokens.Approximate); err != nil {
			t.Fatal(err)
		}
	}
	if vs.Len() != 2 {
		t.Errorf("%d views held within a budget of two", vs.Len())
	}
	if _, ok := vs.views["k"]; ok {
		t.Error("the least recently used view was kept")
	}
	vs.Budget = 1
	if err := with("c", "s", tokens.Approximate); err != nil || vs.Len() != 1 {
		t.Errorf("a view larger than the budget: err %v, %d views held", err, vs.Len())
	}
	vs.Drop("c")
	if vs.Len() != 0 {
		t.Errorf("%d views after Drop", vs.Len())
	}
}
