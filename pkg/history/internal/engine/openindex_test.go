package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// Tests of the open tail (index format 2): appends carried inside the index, sealed in the
// background, read next to histories that the previous version (format 1) wrote.

// fixtureData is the data testdata/format1 holds for each id: the previous version of the
// engine wrote those objects (MaxTailObjects 4: ten appends, a new epoch through 6 with one
// summary, three appends, one batch of two with a binary record, a checkpoint).
func fixtureData(id string) []byte {
	if id == "bin-1" {
		return []byte{0, 1, 2, 0xff, '\n'}
	}
	return fmt.Appendf(nil, `{"id":%q,"text":"message %s"}`, id, id)
}

func loadFormat1(t *testing.T, objs *hookObjects) {
	t.Helper()
	dir := filepath.Join("testdata", "format1")
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := objs.Create(context.Background(), f.Name(), data); err != nil {
			t.Fatal(err)
		}
	}
}

func idsOf(entries []history.Entry) string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return strings.Join(out, " ")
}

func checkFixtureData(t *testing.T, entries []history.Entry) {
	t.Helper()
	for i, e := range entries {
		if e.Seq != uint64(i+1) || !bytes.Equal(e.Data, fixtureData(e.ID)) {
			t.Fatalf("entry %d: %+v", i, e)
		}
	}
}

// A history the previous version wrote (format 1 index, tail objects, sealed segments, an
// older epoch, a checkpoint) is read as it was, keeps its ids, and takes appends, after which
// its index is format 2.
func TestReadsAndExtendsFormat1History(t *testing.T) {
	ctx := context.Background()
	stores, objs := hookStores(t, 3, Options{MaxTailObjects: 4})
	loadFormat1(t, objs)
	h := openHook(t, stores[0])

	old, err := readEpoch(h, 1)
	if err != nil || idsOf(old) != "m-1 m-2 m-3 m-4 m-5 m-6 m-7 m-8 m-9 m-10" {
		t.Fatalf("epoch 1: %s, %v", idsOf(old), err)
	}
	checkFixtureData(t, old)
	const epoch2 = "s-1 m-7 m-8 m-9 m-10 m-11 m-12 m-13 m-14 bin-1"
	cur, err := readEpoch(h, 0)
	if err != nil || idsOf(cur) != epoch2 {
		t.Fatalf("epoch 2: %s, %v", idsOf(cur), err)
	}
	checkFixtureData(t, cur)
	if cps, err := h.Checkpoints(ctx); err != nil || len(cps) != 1 {
		t.Fatalf("checkpoints %v, %v", cps, err)
	} else if data, err := h.GetCheckpoint(ctx, cps[0]); err != nil || string(data) != `{"snapshot":1}` {
		t.Fatalf("checkpoint %q, %v", data, err)
	}

	// A retry of an id the old version stored keeps its sequence; a new one continues.
	rec := func(id string) []history.Record { return []history.Record{{ID: id, Data: fixtureData(id)}} }
	if seqs, err := h.Append(ctx, rec("m-12")); err != nil || seqs[0] != 7 {
		t.Fatalf("retry of m-12: %v, %v; want 7", seqs, err)
	}
	if seqs, err := h.Append(ctx, rec("m-15")); err != nil || seqs[0] != 11 {
		t.Fatalf("m-15: %v, %v; want 11", seqs, err)
	}
	index, _, err := objs.Get(ctx, indexKey)
	if err != nil || !bytes.HasPrefix(index, []byte(`{"format":2,`)) {
		t.Fatalf("index after an append: %.40q, %v; want format 2", index, err)
	}
	cur, err = readEpoch(openHook(t, stores[1]), 0)
	if err != nil || idsOf(cur) != epoch2+" m-15" {
		t.Fatalf("epoch 2 from another store: %s, %v", idsOf(cur), err)
	}
	checkFixtureData(t, cur)

	// Enough appends to seal the old tail objects and the open entries together.
	for i := 16; i <= 30; i++ {
		if _, err := h.Append(ctx, rec(fmt.Sprintf("m-%d", i))); err != nil {
			t.Fatal(err)
		}
		stores[0].WaitBackground()
	}
	if err := h.Retain(ctx, history.Retention{KeepEpochs: 1}); err != nil {
		t.Fatal(err)
	}
	for _, key := range objs.keys() {
		if IsTailKey(key) {
			t.Fatalf("tail object %s left after seals and Retain (objects %v)", key, objs.keys())
		}
	}
	cur, err = readEpoch(openHook(t, stores[2]), 0)
	if err != nil || len(cur) != 26 || idsOf(cur[:10]) != epoch2 {
		t.Fatalf("epoch 2 after seals: %s, %v", idsOf(cur), err)
	}
	checkFixtureData(t, cur)
	if old, err := readEpoch(h, 1); err != nil || len(old) != 10 {
		t.Fatalf("epoch 1 after seals: %s, %v", idsOf(old), err)
	}
}

// opCounter counts a backend's operations by kind of key, through the hook.
type opCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func countOpsByKind(objs *hookObjects) *opCounter {
	c := &opCounter{counts: map[string]int{}}
	objs.setHook(func(op, key string) error {
		kind := "other"
		switch {
		case key == indexKey:
			kind = "index"
		case IsTailKey(key):
			kind = "tail"
		case IsSealedKey(key):
			kind = "sealed"
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.counts[op+" "+kind]++
		return nil
	})
	return c
}

func (c *opCounter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[k]
}

// One writer appending one record at a time: every append is one replace of the index and
// nothing else on its path; seals happen in the background and keep the index bounded.
func TestOneRequestPerAppend(t *testing.T) {
	stores, objs := hookStores(t, 1, Options{})
	h := openHook(t, stores[0])
	ops := countOpsByKind(objs)
	syncSeals := 0
	Failpoint = func(name string) {
		if name == "sealed" {
			syncSeals++
		}
	}
	t.Cleanup(func() { Failpoint = nil })
	const n = 200
	maxOpen := 0
	for i := 1; i <= n; i++ {
		appendOne(t, h, fmt.Sprintf("m-%d", i))
		// A client between two appends: the background seal has its time.
		stores[0].WaitBackground()
		maxOpen = max(maxOpen, len(h.(*log).m.open.lines))
	}
	if got := ops.get("replace index"); got != n {
		t.Fatalf("%d index replaces for %d appends", got, n)
	}
	if got := ops.get("create tail"); got != 0 {
		t.Fatalf("%d tail objects written by single small appends", got)
	}
	if syncSeals != 0 {
		t.Fatalf("%d seals inside a commit; the background should have sealed", syncSeals)
	}
	seals := ops.get("create sealed")
	if seals < n/33 || seals > n/32+1 {
		t.Fatalf("%d sealed segments written for %d appends, want one per 32", seals, n)
	}
	if maxOpen > 33 {
		t.Fatalf("the index carried up to %d entries; seals every 32 should bound it", maxOpen)
	}
	entries, err := readEpoch(openHook(t, hookStoresOver(t, objs)), 0)
	if err != nil || len(entries) != n {
		t.Fatalf("read back %d entries, %v", len(entries), err)
	}
}

// hookStoresOver opens another store over the same conversation objects.
func hookStoresOver(t *testing.T, objs *hookObjects) *Store {
	t.Helper()
	b := &hookBackend{convs: map[string]*hookObjects{convName: objs}}
	s := New(b, Options{})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// An append too big for the index writes one tail object holding the entries the index
// carried and the new ones (so sequences stay in order), and the index carries on after it.
func TestAppendPastTheOpenTail(t *testing.T) {
	ctx := context.Background()
	stores, objs := hookStores(t, 2, Options{MaxOpenBytes: 400, MaxTailObjects: 8})
	h := openHook(t, stores[0])
	ops := countOpsByKind(objs)
	appendOne(t, h, "m-1")
	appendOne(t, h, "m-2")
	big := []history.Record{{ID: "big", Data: []byte(`"` + strings.Repeat("b", 500) + `"`)}}
	if seqs, err := h.Append(ctx, big); err != nil || seqs[0] != 3 {
		t.Fatalf("big append: %v, %v", seqs, err)
	}
	if ops.get("create tail") != 1 {
		t.Fatalf("tail objects written: %d, want 1", ops.get("create tail"))
	}
	var tail string
	for _, key := range objs.keys() {
		if IsTailKey(key) {
			tail = key
		}
	}
	if first, _ := TailFirst(tail); first != 1 {
		t.Fatalf("tail object %s, want it to start at 1 (the entries the index carried)", tail)
	}
	appendOne(t, h, "m-4")
	m := h.(*log).m
	if len(m.Tail) != 1 || len(m.open.lines) != 1 || m.openFirst() != 4 {
		t.Fatalf("index after: %d tail objects, %d open entries from %d", len(m.Tail), len(m.open.lines), m.openFirst())
	}
	entries, err := readEpoch(openHook(t, stores[1]), 0)
	if err != nil || idsOf(entries) != "m-1 m-2 big m-4" {
		t.Fatalf("read: %s, %v", idsOf(entries), err)
	}
	// Sealing takes the tail object and the open entries alike.
	for i := 5; i <= 20; i++ {
		appendOne(t, h, fmt.Sprintf("m-%d", i))
		stores[0].WaitBackground()
	}
	if err := h.Retain(ctx, history.Retention{}); err != nil {
		t.Fatal(err)
	}
	for _, key := range objs.keys() {
		if IsTailKey(key) {
			t.Fatalf("tail object %s left after the seal", key)
		}
	}
	entries, err = readEpoch(openHook(t, hookStoresOver(t, objs)), 0)
	if err != nil || len(entries) != 20 || entries[2].ID != "big" {
		t.Fatalf("read after the seal: %s, %v", idsOf(entries), err)
	}
}

// A background seal that finishes after another writer sealed further is not used: it does
// not continue the sealed prefix any more. Nothing is lost, and Retain removes the segment.
func TestStaleBackgroundSealIsNotUsed(t *testing.T) {
	ctx := context.Background()
	stores, objs := hookStores(t, 3, Options{MaxTailObjects: 4})
	a, b := openHook(t, stores[0]), openHook(t, stores[1])
	release, held := make(chan struct{}), make(chan struct{})
	// Hold a's first background seal until b has sealed past it.
	var first atomic.Bool
	objs.setHook(func(op, key string) error {
		if op == "create" && IsSealedKey(key) && first.CompareAndSwap(false, true) {
			close(held)
			<-release
		}
		return nil
	})
	for i := 1; i <= 4; i++ {
		appendOne(t, a, fmt.Sprintf("a-%d", i))
	}
	await(t, held, "a's background seal never started at MaxTailObjects pieces") // a's seal of 1…4 is in flight
	for i := 1; i <= 6; i++ {
		appendOne(t, b, fmt.Sprintf("b-%d", i)) // b seals past 4, in its background or its commit
	}
	close(release)
	stores[0].WaitBackground()
	sealedByB := b.(*log).m.SealedThrough
	appendOne(t, a, "a-5") // a's index is stale: it reloads, and its seal does not fit
	data, _, err := objs.Get(ctx, indexKey)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := decodeManifest(data); err != nil || m.SealedThrough < sealedByB {
		t.Fatalf("index sealed through %d after a's commit, b had sealed through %d (%v)", m.SealedThrough, sealedByB, err)
	}
	stores[1].WaitBackground()
	stores[0].WaitBackground()
	entries, err := readEpoch(openHook(t, stores[2]), 0)
	if err != nil || idsOf(entries) != "a-1 a-2 a-3 a-4 b-1 b-2 b-3 b-4 b-5 b-6 a-5" {
		t.Fatalf("read: %s, %v", idsOf(entries), err)
	}
	if err := a.Retain(ctx, history.Retention{}); err != nil {
		t.Fatal(err)
	}
	for _, key := range objs.keys() {
		if key == sealedKey(a.(*log).m.Tag, 1, 4) {
			t.Fatalf("the unused segment %s survived Retain", key)
		}
	}
	entries, err = readEpoch(openHook(t, hookStoresOver(t, objs)), 0)
	if err != nil || len(entries) != 11 {
		t.Fatalf("read after Retain: %s, %v", idsOf(entries), err)
	}
}

func TestSealedTo(t *testing.T) {
	tag := "e1-abc"
	tailObj := func(first, last uint64) tailRef { return tailRef{Key: tailKey(tag, first, last), Bytes: 1} }
	withOpen := func(m manifest, first, last uint64) manifest {
		var entries []history.Entry
		var lines [][]byte
		for s := first; s <= last; s++ {
			e := history.Entry{Seq: s, ID: fmt.Sprint(s), Data: []byte("1")}
			entries, lines = append(entries, e), append(lines, encodeLine(e))
		}
		m.open = openTail{}.with(entries, lines)
		m.LastSeq = last
		return m
	}
	// Sealed 1…4, tail objects 5…5, 6…6 and 7…9, open 10…12; every piece holds one payload byte.
	base := withOpen(manifest{Tag: tag, SealedThrough: 4, Tail: []tailRef{tailObj(5, 5), tailObj(6, 6), tailObj(7, 9)}}, 10, 12)
	tests := []struct {
		name           string
		tag            string
		first, through uint64
		ok             bool
		sealed         uint64
		tail, open     int
		dropped        int
	}{
		{name: "one sequence", tag: tag, first: 5, through: 5, ok: true, sealed: 5, tail: 2, open: 3, dropped: 1},
		{name: "through a tail object", tag: tag, first: 5, through: 6, ok: true, sealed: 6, tail: 1, open: 3, dropped: 2},
		{name: "through the first open entry", tag: tag, first: 5, through: 10, ok: true, sealed: 10, tail: 0, open: 2, dropped: 3},
		{name: "into the open tail", tag: tag, first: 5, through: 11, ok: true, sealed: 11, tail: 0, open: 1, dropped: 3},
		{name: "everything", tag: tag, first: 5, through: 12, ok: true, sealed: 12, tail: 0, open: 0, dropped: 3},
		{name: "another epoch", tag: "e2-x", first: 5, through: 12},
		{name: "not continuing the sealed prefix", tag: tag, first: 3, through: 12},
		{name: "after a gap", tag: tag, first: 6, through: 12},
		{name: "past the head", tag: tag, first: 5, through: 13},
		{name: "inside a tail object", tag: tag, first: 5, through: 8},
		{name: "empty range", tag: tag, first: 5, through: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, dropped, ok := base.sealedTo(tt.tag, tt.first, tt.through)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				if m.SealedThrough != base.SealedThrough || len(m.Tail) != len(base.Tail) || len(m.open.lines) != 3 || dropped != nil {
					t.Fatalf("a refused seal changed the index: %+v, dropped %v", m, dropped)
				}
				return
			}
			if m.SealedThrough != tt.sealed || len(m.Tail) != tt.tail || len(m.open.lines) != tt.open || len(dropped) != tt.dropped {
				t.Fatalf("sealed %d, %d tail objects, %d open, dropped %v", m.SealedThrough, len(m.Tail), len(m.open.lines), dropped)
			}
			if m.LastSeq != 12 || m.openFirst() != 13-uint64(tt.open) {
				t.Fatalf("open tail starts at %d with last %d", m.openFirst(), m.LastSeq)
			}
			// The byte count left unsealed decides the seals to come (SealBytes).
			if got, want := m.unsealedBytes(), int64(tt.tail+tt.open); got != want {
				t.Fatalf("%d unsealed payload bytes, want %d", got, want)
			}
			if tt.open > 0 {
				got, err := m.open.from(m.openFirst(), m.openFirst())
				if err != nil || got[0].Seq != m.openFirst() || len(got) != tt.open {
					t.Fatalf("open entries %+v, %v", got, err)
				}
			}
			if len(base.open.lines) != 3 || base.open.payload != 3 || base.SealedThrough != 4 {
				t.Fatal("sealedTo changed its receiver")
			}
		})
	}
}

// A tail object the index does not list is garbage only once the index passed its end:
// one that starts with entries the index carries and ends past the head may belong to a
// commit in flight (the open entries moved into a tail object with the fresh ones).
func TestGarbageKeepsTailObjectsInFlight(t *testing.T) {
	m := manifest{Epoch: 1, Tag: "e1-abc", LastSeq: 10, SealedThrough: 4}
	inFlight := tailKey(m.Tag, 5, 12)
	dead := tailKey(m.Tag, 5, 10)
	got := garbage(m, []ObjectInfo{{Key: inFlight}, {Key: dead}}, nil)
	if len(got) != 1 || got[0] != dead {
		t.Fatalf("garbage %v, want only %s", got, dead)
	}
}

func TestDecodeManifestRefuses(t *testing.T) {
	entryLine := func(seq uint64) string {
		return string(encodeLine(history.Entry{Seq: seq, ID: fmt.Sprint(seq), Data: []byte(`{}`)}))
	}
	index := func(header string, lines ...string) []byte {
		body := header + "\n" + strings.Join(lines, "")
		return sealLines([]byte(body), len(lines))
	}
	good := index(`{"format":2,"epoch":1,"tag":"e1-a","lastSeq":2}`, entryLine(1), entryLine(2))
	if m, err := decodeManifest(good); err != nil || len(m.open.lines) != 2 {
		t.Fatalf("a good index: %v", err)
	}
	withCount := func(data []byte, n int) []byte {
		return bytes.Replace(data, []byte(`{"end":{"n":2,`), fmt.Appendf(nil, `{"end":{"n":%d,`, n), 1)
	}
	tests := map[string][]byte{
		"format 1 with more data":           append([]byte(`{"format":1,"lastSeq":0}`+"\n"), entryLine(1)...),
		"an unknown format":                 []byte(`{"format":3}`),
		"format 2 without a footer":         []byte(`{"format":2}` + "\n"),
		"a footer counting fewer lines":     withCount(good, 1),
		"a footer counting more lines":      withCount(good, 3),
		"more open entries than unsealed":   index(`{"format":2,"epoch":1,"tag":"e1-a","lastSeq":2,"sealedThrough":1}`, entryLine(1), entryLine(2)),
		"sealed past the head":              index(`{"format":2,"epoch":1,"tag":"e1-a","lastSeq":2,"sealedThrough":3}`),
		"a flipped byte under the checksum": bytes.Replace(good, []byte(`"lastSeq":2`), []byte(`"lastSeq":3`), 1),
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeManifest(data); !errors.Is(err, history.ErrCorrupt) {
				t.Fatalf("decode: %v, want ErrCorrupt", err)
			}
		})
	}
	// Entries out of sequence pass the checksum (the writer wrote them) but not a read.
	swapped := index(`{"format":2,"epoch":1,"tag":"e1-a","lastSeq":2}`, entryLine(2), entryLine(1))
	m, err := decodeManifest(swapped)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.open.from(m.openFirst(), 1); !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("entries out of sequence: %v, want ErrCorrupt", err)
	}
}
