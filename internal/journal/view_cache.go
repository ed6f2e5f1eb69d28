package journal

import (
	"context"
	"sync"
	"time"

	"github.com/parley-dev/parley/pkg/conversation/tokens"
	"github.com/parley-dev/parley/pkg/history"
)

// DefaultViewBudget bounds the stored bytes of the histories whose views stay in memory.
const DefaultViewBudget = 256 << 20

// Views is the cache of views: one View per history, so that each reconcile (and each Session API read) only
// folds in what was appended since the last one. Views past the byte budget are dropped,
// least recently used first, and rebuilt from the store when next needed. Safe for concurrent
// use; one view is used by one caller at a time.
type Views struct {
	// Budget is DefaultViewBudget when zero.
	Budget int64

	mu    sync.Mutex
	views map[string]*viewEntry
	// total is the sum of the held views' bytes, kept as they change: summing on every use
	// would be quadratic in the number of histories.
	total    int64
	counters map[string]tokens.Counter
	clock    func() time.Time
}

type viewEntry struct {
	mu        sync.Mutex
	view      *View
	tokenizer string
	lastUsed  time.Time
	bytes     int64
}

// With brings the view of history key up to date and calls fn with it, holding the view for
// the call. tokenizer names the counter (tokens.Names); a view counted with another tokenizer
// is rebuilt. fn must not keep the view past its return.
func (vs *Views) With(ctx context.Context, key, sessionID, tokenizer string, h history.History, fn func(*View) error) error {
	counter, err := vs.counter(tokenizer)
	if err != nil {
		return err
	}
	e := vs.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.view == nil || e.tokenizer != tokenizer || e.view.State.SessionID != sessionID {
		e.view, e.tokenizer = NewView(sessionID, counter), tokenizer
	}
	if err := e.view.Refresh(ctx, h); err != nil {
		// A half-applied refresh is not trusted: the next call rebuilds.
		e.view = nil
		return err
	}
	err = fn(e.view)
	vs.account(key, e, e.view.heldBytes())
	return err
}

// Fold hands entries just appended to history key to its held view (View.Fold), when one is
// held for this session and tokenizer; otherwise the next With reads them. A view that fails
// to fold is dropped and rebuilt by the next With.
func (vs *Views) Fold(key, sessionID, tokenizer string, entries []history.Entry) {
	_, _ = vs.FoldAt(key, sessionID, tokenizer, entries, history.Head{}, nil)
}

// FoldAt is Fold for entries whose append answered head (history.Appended.Head): nothing is
// folded into a view of another epoch. When the folded view then stands exactly at head, it
// calls fn with the view, as With would after a Refresh but without reading the store, and
// reports true; otherwise (no view held, another writer's entries in between, no fn) it
// reports false and the caller uses With.
func (vs *Views) FoldAt(key, sessionID, tokenizer string, entries []history.Entry, head history.Head, fn func(*View) error) (bool, error) {
	e := vs.held(key, sessionID, tokenizer)
	if e == nil {
		return false, nil
	}
	defer e.mu.Unlock()
	if head.Epoch != 0 && e.view.Epoch != head.Epoch {
		// Appended to another epoch than the view holds (a compaction or reset in between):
		// the sequences are not the view's; the next With reads the new epoch.
		return false, nil
	}
	if err := e.view.Fold(entries); err != nil {
		e.view = nil
		return false, nil
	}
	v := e.view
	if v.Epoch != head.Epoch || v.Sequence != head.Sequence {
		return false, nil
	}
	v.Bytes = head.Bytes
	vs.account(key, e, v.heldBytes())
	if fn == nil {
		return false, nil
	}
	return true, fn(v)
}

// Reached calls fn with the held view of history key, without reading the store, when it
// stands at head or past it in head's epoch, and reports whether it did. Past head, the view
// holds what this process folded after it (its own later appends), all of it in sequence.
func (vs *Views) Reached(key, sessionID, tokenizer string, head history.Head, fn func(*View) error) (bool, error) {
	e := vs.held(key, sessionID, tokenizer)
	if e == nil {
		return false, nil
	}
	defer e.mu.Unlock()
	if v := e.view; v.Epoch != head.Epoch || v.Sequence < head.Sequence {
		return false, nil
	}
	return true, fn(e.view)
}

// held returns the entry of history key locked, when it holds a view of session sessionID
// counted with tokenizer; the caller unlocks it. Otherwise nil, nothing locked.
func (vs *Views) held(key, sessionID, tokenizer string) *viewEntry {
	e := vs.locked(key)
	if e != nil && (e.tokenizer != tokenizer || e.view.State.SessionID != sessionID) {
		e.mu.Unlock()
		return nil
	}
	return e
}

// locked returns the entry of history key locked, when it holds a view; the caller unlocks
// it. Otherwise nil, nothing locked.
func (vs *Views) locked(key string) *viewEntry {
	vs.mu.Lock()
	e, ok := vs.views[key]
	vs.mu.Unlock()
	if !ok {
		return nil
	}
	e.mu.Lock()
	if e.view == nil {
		e.mu.Unlock()
		return nil
	}
	return e
}

// Drop forgets the view of a history (deleted, or replaced by another writer's epoch).
func (vs *Views) Drop(key string) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if e, ok := vs.views[key]; ok {
		vs.total -= e.bytes
		delete(vs.views, key)
	}
}

// Len counts the views held.
func (vs *Views) Len() int {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return len(vs.views)
}

func (vs *Views) entry(key string) *viewEntry {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.views == nil {
		vs.views = map[string]*viewEntry{}
	}
	e, ok := vs.views[key]
	if !ok {
		e = &viewEntry{}
		vs.views[key] = e
	}
	e.lastUsed = vs.now()
	return e
}

// account records a view's size and drops the least recently used others while the sum is
// over the budget.
func (vs *Views) account(key string, e *viewEntry, bytes int64) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.views[key] != e {
		return // dropped while in use: no longer held
	}
	vs.total += bytes - e.bytes
	e.bytes = bytes
	budget := vs.Budget
	if budget <= 0 {
		budget = DefaultViewBudget
	}
	for vs.total > budget {
		var oldestKey string
		var oldest *viewEntry
		for k, x := range vs.views {
			if k != key && (oldest == nil || x.lastUsed.Before(oldest.lastUsed)) {
				oldestKey, oldest = k, x
			}
		}
		if oldest == nil {
			return
		}
		vs.total -= oldest.bytes
		delete(vs.views, oldestKey)
	}
}

func (vs *Views) counter(name string) (tokens.Counter, error) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if c, ok := vs.counters[name]; ok {
		return c, nil
	}
	c, err := tokens.New(name)
	if err != nil {
		return nil, err
	}
	if vs.counters == nil {
		vs.counters = map[string]tokens.Counter{}
	}
	vs.counters[name] = c
	return c, nil
}

func (vs *Views) now() time.Time {
	if vs.clock != nil {
		return vs.clock()
	}
	return time.Now()
}
