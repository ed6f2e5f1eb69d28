package engine

import (
	"bytes"
	"errors"
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
			_, err := decodeLines(src, limit)
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
