package session

import (
	"context"
	"sync"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/history"
)

// Sessions reaches the live conversations of this replica. One is built per process and
// shared by the controllers, the Session API and the compaction runner, so that they open the
// same store handles and read the same views. Safe for concurrent use.
type Sessions struct {
	// Stores opens and deletes histories (a *historystore.Stores).
	Stores Stores
	// Views keeps each history folded between uses; an empty set is made on first use.
	Views *journal.Views
	// Activity is the Session API's activity hand-off (nil when it does not run here): the
	// appends of Live.AppendFolded and Live.Append mark the conversation active through it.
	Activity *Activity

	once sync.Once
}

// Stores opens and deletes the histories of Conversations: *historystore.Stores, or in
// tests a store of their own.
type Stores interface {
	// Open returns conv's history; create makes a missing one, otherwise it is
	// history.ErrNotFound.
	Open(ctx context.Context, conv *parleyv1alpha1.Conversation, create bool) (history.History, error)
	// Delete removes everything conv's history stored; a missing history is not an error.
	Delete(ctx context.Context, conv *parleyv1alpha1.Conversation) error
}

// Live is one Conversation's live history on this replica: the name of its history, the
// session its view folds, the tokenizer its view counts with, and, once opened, the store
// handle. Every use of the view goes through it, so these are derived in one place.
type Live struct {
	sessions  *Sessions
	conv      *parleyv1alpha1.Conversation
	key       string
	sessionID string
	tokenizer string
	h         history.History
}

// Of is conv's live history without opening the store: enough for what touches only the
// view held in memory (Peek, Reached, Fold, Seed, Drop). conv's status must hold its session
// id; conv is not copied and must not change while the Live is used.
func (s *Sessions) Of(conv *parleyv1alpha1.Conversation) (*Live, error) {
	key, err := historystore.Key(conv)
	if err != nil {
		return nil, err
	}
	return &Live{sessions: s, conv: conv, key: key, sessionID: conv.Status.SessionID, tokenizer: string(conv.Spec.Context.GetTokenizer())}, nil
}

// Open is Of with the store handle opened. create makes a missing history; without it a
// missing history is history.ErrNotFound. Errors are historystore's (a condition reason) or
// the history's.
func (s *Sessions) Open(ctx context.Context, conv *parleyv1alpha1.Conversation, create bool) (*Live, error) {
	h, err := s.Stores.Open(ctx, conv, create)
	if err != nil {
		return nil, err
	}
	l, err := s.Of(conv)
	if err != nil {
		return nil, err
	}
	l.h = h
	return l, nil
}

// Delete removes everything conv's history stored and forgets its view. A missing history is
// not an error.
func (s *Sessions) Delete(ctx context.Context, conv *parleyv1alpha1.Conversation) error {
	if err := s.Stores.Delete(ctx, conv); err != nil {
		return err
	}
	if l, err := s.Of(conv); err == nil {
		l.Drop()
	}
	return nil
}

// History is the opened store handle (nil for a Live from Of).
func (l *Live) History() history.History { return l.h }

// With brings the shared view up to date from the store and calls fn with it, holding it for
// the call; fn must not keep the view past its return. The Live must be opened.
func (l *Live) With(ctx context.Context, fn func(*journal.View) error) error {
	return l.views().With(ctx, l.key, l.sessionID, l.tokenizer, l.h, fn)
}

// Peek calls fn with the held view as the last use left it, without reading the store, and
// reports whether a view was held.
func (l *Live) Peek(fn func(*journal.View)) bool { return l.views().Peek(l.key, fn) }

// Reached calls fn with the held view, without reading the store, when it stands at head or
// past it in head's epoch, and reports whether it did (journal.Views.Reached).
func (l *Live) Reached(head history.Head, fn func(*journal.View) error) (bool, error) {
	return l.views().Reached(l.key, l.sessionID, l.tokenizer, head, fn)
}

// Fold hands records this process just appended, answered by appended, to the held view.
// When the view then stands exactly at appended's head it calls fn with it, without reading
// the store, and reports true; otherwise the caller reads with With (journal.Views.FoldAt).
// A nil fn only folds.
func (l *Live) Fold(records []history.Record, appended history.Appended, fn func(*journal.View) error) (bool, error) {
	n := min(len(records), len(appended.Sequences))
	entries := make([]history.Entry, n)
	for i := range n {
		entries[i] = history.Entry{Seq: appended.Sequences[i], ID: records[i].ID, Data: records[i].Data}
	}
	return l.views().FoldAt(l.key, l.sessionID, l.tokenizer, entries, appended.Head, fn)
}

// Seed puts the view of an epoch just written in place (journal.Views.Seed): records are its
// first entries and counts the token counts of their messages by id, when already made.
func (l *Live) Seed(epoch uint64, records []history.Record, counts map[string]int) error {
	return l.views().Seed(l.key, l.sessionID, l.tokenizer, epoch, records, counts)
}

// Drop forgets the held view (the history was deleted or its live epoch removed).
func (l *Live) Drop() { l.views().Drop(l.key) }

// Append appends records and marks the conversation active, without folding them into the
// view (the next read does).
func (l *Live) Append(ctx context.Context, records []history.Record) ([]uint64, error) {
	seqs, err := l.h.Append(ctx, records)
	if err != nil {
		return nil, err
	}
	l.Touch()
	return seqs, nil
}

// AppendFolded appends records, folds them into the shared view when it holds the history up
// to them (Fold; otherwise the next read does), and marks the conversation active with the
// head the append left, folded or not: the head says where the write left the history, and
// the reconcile it wakes reads the view instead of the store only when the view stands there
// (Reached; see the package documentation, "The activity hand-off"). An answer whose
// sequences do not pair with the records folds nothing and marks it active without a head.
func (l *Live) AppendFolded(ctx context.Context, records []history.Record, opts history.AppendOptions) (history.Appended, error) {
	res, err := l.h.AppendWith(ctx, records, opts)
	if err != nil {
		return res, err
	}
	if len(res.Sequences) != len(records) {
		l.Touch()
		return res, nil
	}
	_, _ = l.Fold(records, res, nil) // a fold that misses leaves the view behind res.Head
	if a := l.sessions.Activity; a != nil {
		a.TouchAt(l.conv, res.Head)
	}
	return res, nil
}

// Wake hurries the activity of the append just made to the reconcile when the conversation's
// agent sleeps (Activity.Wake): the reconcile starts it.
func (l *Live) Wake() {
	if a := l.sessions.Activity; a != nil && l.conv.AgentAsleep() {
		a.Wake(l.conv)
	}
}

// Touch marks the conversation active, by a write that does not say where it left the history.
func (l *Live) Touch() {
	if a := l.sessions.Activity; a != nil {
		a.Touch(l.conv)
	}
}

func (l *Live) views() *journal.Views {
	s := l.sessions
	s.once.Do(func() {
		if s.Views == nil {
			s.Views = &journal.Views{}
		}
	})
	return s.Views
}
