package compaction

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func nn(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

// TestFairQueueOnePerNamespace: a namespace with many conversations ready (a slow summarizer
// endpoint, say) holds one worker, whatever the number of workers; the other namespaces take
// the rest, in turn.
func TestFairQueueOnePerNamespace(t *testing.T) {
	var q fairQueue
	for _, name := range []string{"a1", "a2", "a3", "a4"} {
		q.push(nn("slow", name))
	}
	q.push(nn("b", "b1"))
	q.push(nn("c", "c1"))

	// Three free workers: one takes slow's oldest, the others b's and c's, never a second of slow.
	took := make([]types.NamespacedName, 0, 3)
	for range 3 {
		key, ok := q.pop()
		if !ok {
			t.Fatalf("no work for a free worker after %v", took)
		}
		took = append(took, key)
	}
	want := []types.NamespacedName{nn("slow", "a1"), nn("b", "b1"), nn("c", "c1")}
	for i := range want {
		if took[i] != want[i] {
			t.Fatalf("workers took %v, want %v", took, want)
		}
	}
	if key, ok := q.pop(); ok {
		t.Fatalf("a fourth worker took %v while slow already runs one", key)
	}

	// slow's compaction ends: its next conversation runs, one at a time.
	q.finish("slow")
	if key, ok := q.pop(); !ok || key != nn("slow", "a2") {
		t.Fatalf("after slow's first finished: %v %v, want slow/a2", key, ok)
	}
	if key, ok := q.pop(); ok {
		t.Fatalf("took %v while slow runs a2", key)
	}
}

// TestFairQueueRoundRobin: namespaces with work waiting take turns; a busy namespace at the
// head of the turns does not stop the others.
func TestFairQueueRoundRobin(t *testing.T) {
	var q fairQueue
	q.push(nn("a", "a1"))
	q.push(nn("a", "a2"))
	q.push(nn("b", "b1"))
	q.push(nn("b", "b2"))
	q.push(nn("c", "c1"))

	var order []types.NamespacedName
	for len(order) < 5 {
		key, ok := q.pop()
		if !ok {
			t.Fatalf("nothing to take after %v", order)
		}
		order = append(order, key)
		q.finish(key.Namespace) // one worker: each job ends before the next starts
	}
	want := []types.NamespacedName{nn("a", "a1"), nn("b", "b1"), nn("c", "c1"), nn("a", "a2"), nn("b", "b2")}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("served %v, want %v", order, want)
		}
	}
	if key, ok := q.pop(); ok {
		t.Fatalf("took %v from an empty queue", key)
	}

	// A namespace that becomes ready again while it runs waits for its turn behind the others.
	q.push(nn("a", "a3"))
	if key, _ := q.pop(); key != nn("a", "a3") {
		t.Fatalf("took %v, want a/a3", key)
	}
	q.push(nn("a", "a4"))
	q.push(nn("b", "b3"))
	if key, ok := q.pop(); !ok || key != nn("b", "b3") {
		t.Fatalf("took %v %v while a runs, want b/b3", key, ok)
	}
}
