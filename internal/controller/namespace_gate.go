package controller

import "sync"

// The reconciles of one namespace that may wait on their histories at once, when the history
// is in an object store: its endpoint is the Conversation author's choice, and an endpoint that
// answers just inside the S3 client's timeouts holds the worker that asked. The workqueues are
// not fair across namespaces, so without a bound one namespace's Conversations or Checkpoints
// could hold every worker; past it, a reconcile puts its history off (HistoryReadDeferred) and
// goes on with what needs no history. The Conversation and Checkpoint controllers share one
// gate, so the bound is on the namespace's total. docs/security.md says what it covers.

// historyIOShare: of each controller's workers, the part one namespace's history I/O may hold
// by default.
const historyIOShare = 4

// HistoryIOPerNamespace is the bound to use: perNamespace when set, else a quarter of the
// workers, at least one.
func HistoryIOPerNamespace(workers, perNamespace int) int {
	if perNamespace > 0 {
		return perNamespace
	}
	return max(workers/historyIOShare, 1)
}

// NamespaceGate counts the history I/O in flight per namespace and refuses past its limit,
// without waiting: a waiting worker is the very thing it bounds. Safe for concurrent use.
type NamespaceGate struct {
	limit int
	mu    sync.Mutex
	held  map[string]int
}

// NewNamespaceGate lets each namespace have limit (at least one) in flight.
func NewNamespaceGate(limit int) *NamespaceGate {
	return &NamespaceGate{limit: max(limit, 1), held: map[string]int{}}
}

// tryEnter takes one of namespace's slots; leave gives it back (call it once). ok is false,
// and nothing is taken, when the namespace holds all of its slots.
func (g *NamespaceGate) tryEnter(namespace string) (leave func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held[namespace] >= g.limit {
		return nil, false
	}
	g.held[namespace]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.held[namespace]--; g.held[namespace] == 0 {
				delete(g.held, namespace)
			}
		})
	}, true
}
