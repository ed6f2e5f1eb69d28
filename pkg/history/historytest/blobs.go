package historytest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

func testCheckpoints(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	s := newStore(t, hn)
	h := open(t, s, name)
	snapshot := bytes.Repeat([]byte("checkpoint state "), 1000)
	d, err := h.PutCheckpoint(ctx, snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if d != history.DigestOf(snapshot) {
		t.Fatalf("digest %s, want %s", d, history.DigestOf(snapshot))
	}
	if again, err := h.PutCheckpoint(ctx, snapshot); err != nil || again != d {
		t.Fatalf("putting the same snapshot again: %s, %v", again, err)
	}
	got, err := h.GetCheckpoint(ctx, d)
	if err != nil || !bytes.Equal(got, snapshot) {
		t.Fatalf("get checkpoint: %d bytes, %v", len(got), err)
	}
	other, err := h.PutCheckpoint(ctx, []byte("other"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := h.Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(list)
	want := []history.Digest{d, other}
	slices.Sort(want)
	if !slices.Equal(list, want) {
		t.Fatalf("checkpoints %v, want %v", list, want)
	}
	if _, err := h.GetCheckpoint(ctx, history.DigestOf([]byte("never stored"))); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("missing checkpoint: %v, want ErrNotFound", err)
	}
	// One flipped bit anywhere is detected.
	flipByte(t, s, name, engine.CheckpointKey(d), len(snapshot)/2)
	if _, err := h.GetCheckpoint(ctx, d); !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("flipped byte: %v, want ErrCorrupt", err)
	}
	// Putting the snapshot again must not acknowledge the corrupt copy.
	if again, err := h.PutCheckpoint(ctx, snapshot); err == nil {
		if got, err := h.GetCheckpoint(ctx, again); err != nil || !bytes.Equal(got, snapshot) {
			t.Fatalf("PutCheckpoint over a corrupt copy succeeded, then get: %d bytes, %v", len(got), err)
		}
	} else if !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("PutCheckpoint over a corrupt copy: %v, want success or ErrCorrupt", err)
	}
}

func testCorruptSegment(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	s := newStore(t, hn)
	h := open(t, s, name)
	// Past twice the 32 pieces of an unsealed tail: a seal has happened, whether the
	// background seal got there first or the commit at the bound did it.
	for i := range 72 {
		mustAppend(t, h, records("c", i, 1))
	}
	waitBackground(s)
	var sealed []string
	for _, key := range rawKeys(t, s, name) {
		if engine.IsSealedKey(key) {
			sealed = append(sealed, key)
		}
	}
	if len(sealed) == 0 {
		t.Fatal("no sealed segment after 72 appends")
	}
	// Every one: a reader may use any segment covering a sequence.
	for _, key := range sealed {
		flipByte(t, s, name, key, 40)
	}
	// A fresh store has nothing cached.
	_, err := open(t, newStore(t, hn), name).Read(ctx, history.ReadOptions{})
	if !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("read of a segment with a flipped byte: %v, want ErrCorrupt", err)
	}
}

// testCorruptIndex: the index carries the last entries itself; a flipped byte anywhere in
// it (header, an entry, the footer) is ErrCorrupt, never a silently different history.
func testCorruptIndex(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	s := newStore(t, hn)
	h := open(t, s, name)
	for i := range 3 {
		mustAppend(t, h, records("x", i, 1))
	}
	data, _, err := rawObjects(t, s, name).Get(ctx, "index")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{2, len(data) / 2, len(data) - 90, len(data) - 10} {
		flipByte(t, s, name, "index", at)
		fresh := open(t, newStore(t, hn), name)
		if _, err := fresh.Read(ctx, history.ReadOptions{}); !errors.Is(err, history.ErrCorrupt) {
			t.Fatalf("read with byte %d of %d of the index flipped: %v, want ErrCorrupt", at, len(data), err)
		}
		flipByte(t, s, name, "index", at) // back
	}
	if entries := readAll(t, open(t, newStore(t, hn), name), 0); len(entries) != 3 {
		t.Fatalf("%d entries after the index was restored, want 3", len(entries))
	}
}

func testLargeRecords(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	h := open(t, newStore(t, hn), name)
	big := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<20) // 4 MiB, not JSON: stored as base64
	rec := []history.Record{{ID: "big", Data: big}}
	seqs, err := h.Append(ctx, rec)
	if !hn.LargeRecords {
		if !errors.Is(err, history.ErrTooLarge) || !strings.Contains(err.Error(), hn.TooLargeHint) {
			t.Fatalf("4 MiB record: %v, want ErrTooLarge mentioning %q", err, hn.TooLargeHint)
		}
		if head, _ := h.Head(ctx); head.Sequence != 0 {
			t.Fatalf("a refused record moved the head to %d", head.Sequence)
		}
		return
	}
	if err != nil {
		t.Fatalf("4 MiB record: %v", err)
	}
	mustAppend(t, h, records("after", 0, 1))
	entries := readAll(t, h, 0)
	if len(entries) != 2 || seqs[0] != 1 || !bytes.Equal(entries[0].Data, big) {
		t.Fatalf("4 MiB record did not round-trip (%d entries)", len(entries))
	}
	// Twice again, so it is sealed and read back from a sealed segment.
	mustAppend(t, h, []history.Record{{ID: "big2", Data: big}})
	mustAppend(t, h, []history.Record{{ID: "big3", Data: big}})
	for i := range 33 {
		mustAppend(t, h, records("fill", i, 1))
	}
	entries = readAll(t, open(t, newStore(t, hn), name), 0)
	if len(entries) != 37 {
		t.Fatalf("%d entries, want 37", len(entries))
	}
	for _, i := range []int{0, 2, 3} {
		if !bytes.Equal(entries[i].Data, big) {
			t.Fatalf("4 MiB record %s did not round-trip through a sealed segment", entries[i].ID)
		}
	}
}

func testMaxBytes(t *testing.T, hn Harness) {
	ctx := context.Background()
	s := hn.NewWithLimit(t, 2000)
	t.Cleanup(func() { _ = s.Close() })
	h := open(t, s, conversationName(t))
	mustAppend(t, h, records("b", 0, 10)) // ~90 bytes each
	rec := []history.Record{{ID: "too-much", Data: bytes.Repeat([]byte("x"), 1500)}}
	_, err := h.Append(ctx, rec)
	if !errors.Is(err, history.ErrTooLarge) || !strings.Contains(err.Error(), hn.TooLargeHint) {
		t.Fatalf("append past maxBytes: %v, want ErrTooLarge mentioning %q", err, hn.TooLargeHint)
	}
	if head, _ := h.Head(ctx); head.Sequence != 10 {
		t.Fatalf("refused append moved the head to %d", head.Sequence)
	}
	mustAppend(t, h, records("b", 10, 1)) // small ones still fit
}

// testArbitraryBytes: records are opaque; whatever bytes go in come out.
func testArbitraryBytes(t *testing.T, hn Harness) {
	name := conversationName(t)
	h := open(t, newStore(t, hn), name)
	data := [][]byte{
		[]byte(` {"leading":"space"}`), []byte("{\n  \"pretty\": true\n}"),
		{0, 0xff, 0xfe, '\n'},
		{},
		[]byte(`"just a string"`), []byte(`{"unicode":"é✓"}`), []byte("not json at all"),
	}
	recs := make([]history.Record, len(data))
	for i, d := range data {
		recs[i] = history.Record{ID: "b" + string(rune('0'+i)), Data: d}
	}
	mustAppend(t, h, recs)
	entries := readAll(t, open(t, newStore(t, hn), name), 0)
	if len(entries) != len(data) {
		t.Fatalf("%d entries, want %d", len(entries), len(data))
	}
	for i, e := range entries {
		if !bytes.Equal(e.Data, data[i]) {
			t.Fatalf("record %d came back as %q, want %q", i, e.Data, data[i])
		}
	}
	if _, err := h.Append(context.Background(), []history.Record{{ID: "bad\xff", Data: nil}}); err == nil {
		t.Fatal("an id that is not UTF-8 was accepted")
	}
}

// testCallerBufferReuse: once Append returns, the caller may reuse the
// memory of its records (as with io.Writer); what was appended must not
// change, for this store or any other.
func testCallerBufferReuse(t *testing.T, hn Harness) {
	name := conversationName(t)
	h := open(t, newStore(t, hn), name)
	buf := []byte(`{"text":"original"}`)
	mustAppend(t, h, []history.Record{{ID: "r-1", Data: buf}})
	copy(buf, `{"text":"OVERWRIT"}`)
	summary := []byte(`{"text":"summary"}`)
	if _, err := h.NewEpoch(context.Background(), history.EpochRequest{Epoch: 1, Through: 0, Records: []history.Record{{ID: "s-1", Data: summary}}}); err != nil {
		t.Fatal(err)
	}
	copy(summary, `{"text":"OVERWRI"}`)
	for _, h := range []history.History{h, open(t, newStore(t, hn), name)} {
		for epoch, want := range map[uint64][]string{1: {`{"text":"original"}`}, 2: {`{"text":"summary"}`, `{"text":"original"}`}} {
			entries := readAll(t, h, epoch)
			if len(entries) != len(want) {
				t.Fatalf("epoch %d has %d entries, want %d", epoch, len(entries), len(want))
			}
			for i, e := range entries {
				if string(e.Data) != want[i] {
					t.Fatalf("after the caller reused its buffers, epoch %d entry %d holds %q, want %q", epoch, e.Seq, e.Data, want[i])
				}
			}
		}
	}
}
