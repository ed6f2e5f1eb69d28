package engine

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// FuzzDecodeManifest: an index decodes or is ErrCorrupt; one that decodes
// encodes to an index that decodes to the same, field for field, and whose
// bytes are a fixed point (the next writer's successor differs only in its
// generation).
func FuzzDecodeManifest(f *testing.F) {
	f.Add(newManifest().encode())
	f.Add([]byte(`{"format":1,"tail":[{"k":"x"}]}`))
	// Every field, written by hand so that an encoder dropping one cannot shape the seed.
	f.Add([]byte(`{"format":1,"generation":7,"epoch":3,"tag":"e3-abc","lastSeq":40,"bytes":900,"sealedThrough":32,` +
		`"tail":[{"k":"e3-abc.t.000000000033-000000000040.n0nce123","b":100}],"old":[{"epoch":2,"tag":"e2-xyz","lastSeq":12,"bytes":300}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeManifest(data)
		if err != nil {
			if !errors.Is(err, history.ErrCorrupt) {
				t.Fatalf("decode error %v is not ErrCorrupt", err)
			}
			return
		}
		encoded := m.encode()
		again, err := decodeManifest(encoded)
		if err != nil || !reflect.DeepEqual(withNilLists(again), withNilLists(m)) {
			t.Fatalf("re-encoding changed the index: %+v vs %+v (%v)", again, m, err)
		}
		if !bytes.Equal(again.encode(), encoded) {
			t.Fatalf("encoding is not stable: %s vs %s", again.encode(), encoded)
		}
		next := m.successor()
		if next.Generation != m.Generation+1 || bytes.Equal(next.encode(), encoded) {
			t.Fatalf("successor of generation %d has generation %d", m.Generation, next.Generation)
		}
	})
}

// FuzzParseDataKey: a key is accepted only in the form the engine writes, so
// writing the parsed key again gives the same key. Readers and Retain rebuild
// sealed keys from the parsed range: a key accepted in another form (unpadded,
// with a suffix) would be read or deleted under a name that does not exist.
func FuzzParseDataKey(f *testing.F) {
	f.Add(sealedKey("e1-abc", 1, 2))
	f.Add(tailKey("e9-zz", 5, 5))
	f.Add(sealedKey("e2-x", 1, 1234567890123))
	f.Add("e1-abc.s.1-2")
	f.Add("e1-abc.s.000000000001-000000000002.bak")
	f.Fuzz(func(t *testing.T, key string) {
		dk, ok := parseDataKey(key)
		if !ok {
			return
		}
		if dk.first == 0 || dk.last < dk.first || dk.tag == "" {
			t.Fatalf("accepted %q with tag %q, range %d-%d", key, dk.tag, dk.first, dk.last)
		}
		want := sealedKey(dk.tag, dk.first, dk.last)
		if dk.tail {
			// A tail key ends in its writer's nonce.
			want = strings.Replace(want, ".s.", ".t.", 1) + key[strings.LastIndexByte(key, '.'):]
		}
		if key != want {
			t.Fatalf("accepted %q, which the engine writes as %q", key, want)
		}
		if again, ok := parseDataKey(want); !ok || again != dk {
			t.Fatalf("%q parsed as %+v, written back as %q, which parses as %+v", key, dk, want, again)
		}
	})
}

// withNilLists: an empty list and no list are the same index ("tail":[] is
// written back without the member).
func withNilLists(m manifest) manifest {
	if len(m.Tail) == 0 {
		m.Tail = nil
	}
	if len(m.Old) == 0 {
		m.Old = nil
	}
	return m
}
