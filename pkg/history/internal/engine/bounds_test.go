package engine

import (
	"bytes"
	le "encoding/binary"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// endless is a stream that never ends: head, then pattern repeated. An inflating reader fed a
// bomb is one.
type endless struct {
	head, pattern []byte
	served        int64
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		at := e.served + int64(i)
		if at < int64(len(e.head)) {
			p[i] = e.head[at]
		} else {
			p[i] = e.pattern[(at-int64(len(e.head)))%int64(len(e.pattern))]
		}
	}
	e.served += int64(len(p))
	return len(p), nil
}

// Whatever an inflating reader would go on producing, the decoder takes at most limit+1 bytes
// of it and stops with ErrCorrupt: one endless line that starts as an entry, endless
// well-formed entry lines, and (after one buffer) a line that starts as nothing this codec writes.
func TestDecodeStopsReadingAtTheLimit(t *testing.T) {
	const limit = 1 << 20
	for name, tt := range map[string]struct {
		head, pattern string
		most          int64
	}{
		"one endless entry line": {`{"s":1,"id":"a","b":"`, "A", limit + 1},
		"endless entry lines":    {"", `{"s":1,"id":"a","j":0}` + "\n", limit + 1},
		"junk":                   {"", "\x00", 64 << 10},
	} {
		t.Run(name, func(t *testing.T) {
			src := &endless{head: []byte(tt.head), pattern: []byte(tt.pattern)}
			_, err := decodeLines(src, limit, math.MaxInt)
			if !errors.Is(err, history.ErrCorrupt) {
				t.Fatalf("decode of an endless stream: %v, want ErrCorrupt", err)
			}
			if src.served > tt.most {
				t.Fatalf("the decoder read %d bytes of an object limited to %d, want at most %d", src.served, limit, tt.most)
			}
		})
	}
}

// An object is read up to the limit and not one byte more, compressed or not.
func TestDecodeLimitIsExact(t *testing.T) {
	plain := encodeEntries([]history.Entry{{Seq: 1, ID: "a", Data: bytes.Repeat([]byte("x"), 4096)}})
	for name, data := range map[string][]byte{"plain": plain, "compressed": compress(plain)} {
		if _, err := decodeEntries(data, int64(len(plain))); err != nil {
			t.Errorf("%s, at the limit: %v", name, err)
		}
		if _, err := decodeEntries(data, int64(len(plain))-1); !errors.Is(err, history.ErrCorrupt) {
			t.Errorf("%s, one byte past the limit: %v, want ErrCorrupt", name, err)
		}
	}
}

// A compressed segment whose trailer declares more than the limit is refused before it is
// inflated: decoding it allocates next to nothing.
func TestDeclaredOversizeIsNotInflated(t *testing.T) {
	const limit = 1 << 20
	data := compress(make([]byte, 8*limit))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := decodeEntries(data, limit)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("decode: %v, want ErrCorrupt", err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > limit/8 {
		t.Fatalf("decoding allocated %d bytes: the segment was inflated", allocated)
	}
}

// Data after the one gzip member compress writes is refused, as any other edit is.
func TestDecodeRefusesDataAfterTheCompressedSegment(t *testing.T) {
	data := compress(encodeEntries([]history.Entry{{Seq: 1, ID: "a", Data: []byte(`{}`)}}))
	for name, tail := range map[string][]byte{"a second member": data, "junk": []byte("junk")} {
		if _, err := decodeEntries(append(bytes.Clone(data), tail...), testLimit); !errors.Is(err, history.ErrCorrupt) {
			t.Errorf("%s after the segment: %v, want ErrCorrupt", name, err)
		}
	}
}

// The cache counts decoded entries at the memory they take, not at their stored size: a
// compressed segment takes many times its size once decoded.
func TestCacheCountsDecodedEntries(t *testing.T) {
	entries := []history.Entry{{Seq: 1, ID: "a", Data: make([]byte, 1000)}, {Seq: 2, ID: "b", Data: make([]byte, 1000)}}
	if got, stored := footprint(entries), len(compress(encodeEntries(entries))); got < 2000 || got <= int64(stored) {
		t.Fatalf("footprint %d bytes for 2,000 bytes of data stored in %d", got, stored)
	}
}

// lineBomb is a compressed segment of one entry line that never ends, n bytes long, whose
// trailer declares declared bytes.
func lineBomb(n int, declared uint32) []byte {
	head := []byte(`{"s":1,"id":"bomb","b":"`)
	gz := compress(append(head, bytes.Repeat([]byte("A"), n-len(head))...))
	le.LittleEndian.PutUint32(gz[len(gz)-4:], declared)
	return gz
}

// An honest segment inflates to exactly the size its trailer declares: inflation stops there,
// so a bomb that hides its size (declares less than it holds) is refused having inflated next
// to nothing, far below the store's limit.
func TestInflationStopsAtTheDeclaredSize(t *testing.T) {
	const limit = 16 << 20
	data := lineBomb(limit, 1000)
	var err error
	allocated := allocatedBy(func() { _, err = decodeEntries(data, limit) })
	if !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("decode of a segment holding more than it declares: %v, want ErrCorrupt", err)
	}
	if allocated > limit/8 {
		t.Fatalf("decoding allocated %d KiB: inflation went past the declared 1,000 bytes", allocated>>10)
	}
}

// A line longer than the read buffer is gathered in one allocation of what is left of the
// object, not by doubling: a bomb that truthfully declares the limit costs about the limit once,
// not the limit and every smaller buffer before it.
func TestALongLineIsGatheredOnce(t *testing.T) {
	const limit = 16 << 20
	data := lineBomb(limit, limit)
	var err error
	allocated := allocatedBy(func() { _, err = decodeEntries(data, limit) })
	if !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("decode of a line that never ends: %v, want ErrCorrupt", err)
	}
	if allocated > limit*5/4 {
		t.Fatalf("gathering one line of %d MiB allocated %d MiB", limit>>20, allocated>>20)
	}
}

// A segment holds no more entries than its key names: decoding stops at the next one, so what
// it holds stays within what the read asked of the decode budget.
func TestDecodeStopsPastTheEntriesTheKeyNames(t *testing.T) {
	data := encodeEntries([]history.Entry{{Seq: 1, ID: "a", Data: []byte(`1`)}, {Seq: 2, ID: "b", Data: []byte(`2`)}})
	if _, err := decodeSegment(data, testLimit, 2); err != nil {
		t.Fatalf("two entries where the key names two: %v", err)
	}
	if _, err := decodeSegment(data, testLimit, 1); !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("two entries where the key names one: %v, want ErrCorrupt", err)
	}
}

func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
