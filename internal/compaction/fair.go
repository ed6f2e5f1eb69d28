package compaction

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// fairQueue decides which ready compaction a free worker takes, so that one namespace cannot
// hold every worker: a namespace has at most one compaction running, and the namespaces with
// work waiting take turns (round-robin), each in the order its conversations became ready. A
// namespace whose summarizer endpoint is slow then delays its own compactions only.
//
// It is pure: no clock, no goroutines; the Runner holds its lock around every call. The
// workqueue in front of it keeps what it is good at (one entry per conversation, the backoff
// of failed attempts); a key reaches push once it is ready, and the Runner hands it back to
// the workqueue after finish.
type fairQueue struct {
	// waiting holds the ready conversations of each namespace, oldest first.
	waiting map[string][]string
	// turns lists the namespaces with work waiting, the next to be served first.
	turns []string
	// running marks the namespaces with a compaction in flight.
	running map[string]bool
}

// push adds a ready conversation.
func (q *fairQueue) push(key types.NamespacedName) {
	if q.waiting == nil {
		q.waiting, q.running = map[string][]string{}, map[string]bool{}
	}
	if len(q.waiting[key.Namespace]) == 0 {
		q.turns = append(q.turns, key.Namespace)
	}
	q.waiting[key.Namespace] = append(q.waiting[key.Namespace], key.Name)
}

// pop takes the next conversation to compact: the oldest of the first namespace in turn with
// no compaction running, which then goes to the back of the turns. False when every namespace
// with work waiting has one running (or nothing waits).
func (q *fairQueue) pop() (types.NamespacedName, bool) {
	for i, ns := range q.turns {
		if q.running[ns] {
			continue
		}
		names := q.waiting[ns]
		key := types.NamespacedName{Namespace: ns, Name: names[0]}
		q.turns = slices.Delete(q.turns, i, i+1)
		if len(names) > 1 {
			q.waiting[ns] = names[1:]
			q.turns = append(q.turns, ns)
		} else {
			delete(q.waiting, ns)
		}
		q.running[ns] = true
		return key, true
	}
	return types.NamespacedName{}, false
}

// finish marks the compaction of a conversation of namespace done: the namespace may run
// another.
func (q *fairQueue) finish(namespace string) {
	delete(q.running, namespace)
}
