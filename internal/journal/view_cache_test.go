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

// failingReads fails Head and Read while fail is set.
type failingReads struct {
	history.History
	fail bool
}

func (f *failingReads) Head(ctx context.Context) (history.Head, error) {
	if f.fail {
		return history.Head{}, history.ErrUnavailable
	}
	return f.History.Head(ctx)
}

func (f *failingReads) Read(ctx context.Context, opts history.ReadOptions) (history.Page, error) {
	if f.fail {
		return history.Page{}, history.ErrUnavailable
	}
	return f.History.Read(ctx, opts)
}

func TestViews(t *testing.T) {
	m := msg("u1", conversation.RoleUser, text("hello there"))
	record := mustRecord(t)(MessageRecord(&m))
	inner := &countingHistory{History: newHistory(t)}
	h := &failingReads{History: inner}
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
	if vs.Len() != 0 || vs.total != 0 {
		t.Errorf("%d views holding %d bytes after Drop", vs.Len(), vs.total)
	}

	// A view dropped while in use is not counted when its use ends.
	vs.Budget = 0
	if err := vs.With(t.Context(), "d", "s", tokens.Approximate, h, func(*View) error { vs.Drop("d"); return nil }); err != nil {
		t.Fatal(err)
	}
	if vs.Len() != 0 || vs.total != 0 {
		t.Errorf("a view dropped in use: %d views holding %d bytes", vs.Len(), vs.total)
	}
	for _, key := range []string{"e", "f"} {
		if err := with(key, "s", tokens.Approximate); err != nil {
			t.Fatal(err)
		}
	}
	if vs.total != 2*size {
		t.Errorf("two views of %d bytes counted as %d", size, vs.total)
	}
}

func TestViewsFold(t *testing.T) {
	must := mustRecord(t)
	h := &countingHistory{History: newHistory(t)}
	var vs Views
	var seen *View
	with := func() error {
		return vs.With(t.Context(), "k", "s", tokens.Approximate, h, func(v *View) error { seen = v; return nil })
	}
	m := msg("u1", conversation.RoleUser, text("hello"))
	rec := must(MessageRecord(&m))
	entry := func(seq uint64) []history.Entry { return []history.Entry{{Seq: seq, ID: rec.ID, Data: rec.Data}} }

	vs.Fold("k", "s", tokens.Approximate, entry(1)) // no view held yet: nothing to do
	if vs.Len() != 0 {
		t.Fatalf("Fold created a view")
	}
	// A view held from before the append takes the appended entry without reading it back.
	if err := with(); err != nil {
		t.Fatal(err)
	}
	seqs := appendAll(t, h, rec)
	vs.Fold("k", "s", tokens.Approximate, entry(seqs[0]))
	h.entries = 0
	if err := with(); err != nil || seen.Messages() != 1 || h.entries != 0 {
		t.Errorf("after Fold: err %v, %d messages, %d entries read", err, seen.Messages(), h.entries)
	}
	// Another session's or tokenizer's view is not touched.
	vs.Fold("k", "other", tokens.Approximate, entry(2))
	vs.Fold("k", "s", tokens.Cl100kBase, entry(2))
	if seen.Sequence != 1 {
		t.Errorf("a foreign Fold moved the view to %d", seen.Sequence)
	}
}

func TestViewsFoldAt(t *testing.T) {
	h := &countingHistory{History: newHistory(t)}
	var vs Views
	hold := func() {
		t.Helper()
		if err := vs.With(t.Context(), "k", "s", tokens.Approximate, h, func(*View) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	appendOne := func(id string) ([]history.Entry, history.Appended) { return appendMessage(t, h, id) }
	var seen *View
	keep := func(v *View) error { seen = v; return nil }

	entries, got := appendOne("u1")
	if ok, err := vs.FoldAt("k", "s", tokens.Approximate, entries, got.Head, keep); ok || err != nil {
		t.Fatalf("no view held: FoldAt reported %v, %v", ok, err)
	}
	hold()
	entries, got = appendOne("u2")
	h.trips = 0
	ok, err := vs.FoldAt("k", "s", tokens.Approximate, entries, got.Head, keep)
	if !ok || err != nil || seen.Messages() != 2 || seen.Sequence != got.Head.Sequence || seen.Bytes != got.Head.Bytes || h.trips != 0 {
		t.Fatalf("at the head: ok %v, err %v, view at %d with %d messages and %d bytes, head %+v, %d round trips to the store",
			ok, err, seen.Sequence, seen.Messages(), seen.Bytes, got.Head, h.trips)
	}

	// Another writer's entry lands between the view and this append: not at the head.
	appendOne("other")
	entries, got = appendOne("u3")
	seen = nil
	if ok, err := vs.FoldAt("k", "s", tokens.Approximate, entries, got.Head, keep); ok || err != nil || seen != nil {
		t.Fatalf("with a gap: FoldAt reported %v, %v and called fn: %v", ok, err, seen != nil)
	}
	hold() // the gap is read by the next With
	if err := vs.With(t.Context(), "k", "s", tokens.Approximate, h, keep); err != nil || seen.Messages() != 4 {
		t.Fatalf("after the gap: %v, %d messages, want 4", err, seen.Messages())
	}
}

// TestViewsReached: the held view stands in for a read when it is at the head an append left
// or past it (later appends folded), never behind it, in another epoch, or for another
// session; and an append of another epoch is not folded into the view.
func TestViewsReached(t *testing.T) {
	h := &countingHistory{History: newHistory(t)}
	var vs Views
	appendOne := func(id string) ([]history.Entry, history.Appended) { return appendMessage(t, h, id) }
	var seen *View
	reached := func(head history.Head) bool {
		t.Helper()
		seen = nil
		ok, err := vs.Reached("k", "s", tokens.Approximate, head, func(v *View) error { seen = v; return nil })
		if err != nil || ok != (seen != nil) {
			t.Fatalf("Reached: %v, %v; fn called: %v", ok, err, seen != nil)
		}
		return ok
	}

	_, first := appendOne("u1")
	if reached(first.Head) {
		t.Fatal("no view held, yet Reached")
	}
	if err := vs.With(t.Context(), "k", "s", tokens.Approximate, h, func(*View) error { return nil }); err != nil {
		t.Fatal(err)
	}
	entries, second := appendOne("u2")
	if _, err := vs.FoldAt("k", "s", tokens.Approximate, entries, second.Head, nil); err != nil {
		t.Fatal(err)
	}
	h.trips = 0
	if !reached(second.Head) || seen.Messages() != 2 || seen.Bytes != second.Head.Bytes {
		t.Fatalf("at the head: %+v", seen)
	}
	if !reached(first.Head) || seen.Messages() != 2 {
		t.Fatal("past an earlier head: not Reached")
	}
	if h.trips != 0 {
		t.Fatalf("%d round trips to the store", h.trips)
	}
	_, third := appendOne("u3") // not folded: the view is behind it
	if reached(third.Head) {
		t.Fatal("behind the head, yet Reached")
	}
	if ok, _ := vs.Reached("k", "other", tokens.Approximate, second.Head, func(*View) error { return nil }); ok {
		t.Fatal("another session's view Reached")
	}
	other := second.Head
	other.Epoch++
	if reached(other) {
		t.Fatal("another epoch Reached")
	}
	if _, err := vs.FoldAt("k", "s", tokens.Approximate, []history.Entry{{Seq: 3, ID: "x", Data: entries[0].Data}}, history.Head{Epoch: other.Epoch, Sequence: 3}, nil); err != nil {
		t.Fatal(err)
	}
	if !reached(second.Head) || seen.Sequence != second.Head.Sequence {
		t.Fatalf("an append of another epoch was folded into the view: at %d", seen.Sequence)
	}
}

// appendMessage appends a user message with id to h and returns its entry and the answer.
func appendMessage(t *testing.T, h history.History, id string) ([]history.Entry, history.Appended) {
	t.Helper()
	m := msg(id, conversation.RoleUser, text("hello"))
	rec := mustRecord(t)(MessageRecord(&m))
	got, err := AppendAll(t.Context(), h, []history.Record{rec})
	if err != nil {
		t.Fatal(err)
	}
	return []history.Entry{{Seq: got.Sequences[0], ID: rec.ID, Data: rec.Data}}, got
}
