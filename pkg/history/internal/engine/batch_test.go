package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/history"
)

// Appends that queue while a commit is in flight go in the next group commit together, up to
// MaxBatchRecords records and MaxBatchBytes bytes; a single request over a cap still commits,
// alone.
func TestGroupCommitCaps(t *testing.T) {
	ones := []int{1, 1, 1, 1, 1, 1, 1}
	tests := map[string]struct {
		opts     Options
		requests []int // records per request, queued in this order; each record has 10 bytes
		want     []int // records per group commit
	}{
		"records cap":                          {Options{MaxBatchRecords: 3}, ones, []int{3, 3, 1}},
		"bytes cap":                            {Options{MaxBatchBytes: 30}, ones, []int{3, 3, 1}},
		"a request over the cap commits alone": {Options{MaxBatchRecords: 3}, []int{1, 5, 1}, []int{1, 5, 1}},
		"the default caps take every waiting request": {Options{}, ones, []int{7}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			q := watchQueued(t)
			stores, objs := hookStores(t, 1, tt.opts)
			h := openHook(t, stores[0])
			gate := holdNextCommit(t, objs)
			held := q.start(t, h, []history.Record{{ID: "held", Data: []byte(`"12345678"`)}})
			await(t, gate.held, "the first commit never wrote the index")
			var results []<-chan appendResult
			for i, n := range tt.requests {
				recs := make([]history.Record, n)
				for j := range recs {
					recs[j] = history.Record{ID: fmt.Sprintf("r%d-%d", i, j), Data: []byte(`"12345678"`)}
				}
				results = append(results, q.start(t, h, recs))
			}
			close(gate.release)
			if r := wait(t, held); r.err != nil {
				t.Fatal(r.err)
			}
			for i, ch := range results {
				if r := wait(t, ch); r.err != nil || len(r.seqs) != tt.requests[i] {
					t.Fatalf("request %d: %v, %v", i, r.seqs, r.err)
				}
			}
			if got := gate.commits(objs)[1:]; !slices.Equal(got, tt.want) {
				t.Fatalf("group commits of %v records, want %v", got, tt.want)
			}
		})
	}
}

// Linger holds a commit back to gather more appends: the index moves no sooner than Linger
// after the append.
func TestLingerHoldsCommit(t *testing.T) {
	const linger = 50 * time.Millisecond
	stores, objs := hookStores(t, 1, Options{Linger: linger})
	h := openHook(t, stores[0])
	var committed time.Time
	objs.setHook(func(op, key string) error {
		if op == "replace" && key == indexKey && committed.IsZero() {
			committed = time.Now()
		}
		return nil
	})
	start := time.Now()
	appendOne(t, h, "m-1")
	if waited := committed.Sub(start); waited < linger {
		t.Fatalf("the commit moved the index %s after the append, before Linger (%s)", waited, linger)
	}
}

// commitGate holds the first index write of a commit until release is closed, so that
// appends queue behind a commit in flight; it notes the head before every index write.
type commitGate struct {
	held, release chan struct{}
	mu            sync.Mutex
	heads         []uint64
}

func holdNextCommit(t *testing.T, objs *hookObjects) *commitGate {
	t.Helper()
	g := &commitGate{held: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	objs.setHook(func(op, key string) error {
		if op != "replace" || key != indexKey {
			return nil
		}
		g.mu.Lock()
		g.heads = append(g.heads, indexHead(t, objs))
		g.mu.Unlock()
		once.Do(func() {
			close(g.held)
			<-g.release
		})
		return nil
	})
	t.Cleanup(func() { objs.setHook(nil) })
	return g
}

// commits returns the records each index write committed, oldest first.
func (g *commitGate) commits(objs *hookObjects) []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	heads := append(slices.Clone(g.heads), indexHead(nil, objs))
	out := make([]int, 0, len(heads)-1)
	for i := 1; i < len(heads); i++ {
		out = append(out, int(heads[i]-heads[i-1]))
	}
	return out
}

func indexHead(t *testing.T, objs *hookObjects) uint64 {
	objs.mu.Lock()
	data := objs.items[indexKey].data
	objs.mu.Unlock()
	m, err := decodeManifest(data)
	if err != nil && t != nil {
		t.Error(err)
	}
	return m.LastSeq
}

type appendResult struct {
	seqs []uint64
	err  error
}

// queuedAppends reports each Append that has queued its request for a group commit (the
// "queued" failpoint). Set before the test's stores start work; cleared when it ends.
type queuedAppends chan struct{}

func watchQueued(t *testing.T) queuedAppends {
	q := make(queuedAppends, 1000)
	Failpoint = func(name string) {
		if name == "queued" {
			q <- struct{}{}
		}
	}
	t.Cleanup(func() { Failpoint = nil })
	return q
}

// start begins an Append and returns once it has queued its request; the result arrives on
// the channel.
func (q queuedAppends) start(t *testing.T, h history.History, recs []history.Record) <-chan appendResult {
	t.Helper()
	out := make(chan appendResult, 1)
	go func() {
		seqs, err := h.Append(context.Background(), recs)
		out <- appendResult{seqs, err}
	}()
	await(t, q, "the append never queued its request")
	return out
}

// await fails the test when ch yields nothing within 10 s (a hang, not a slow machine).
func await[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
}

// wait returns an Append's result; an append that never returns fails the test.
func wait(t *testing.T, ch <-chan appendResult) appendResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("append never returned")
		return appendResult{}
	}
}
