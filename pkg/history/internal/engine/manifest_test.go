package engine

import (
	"errors"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

func FuzzDecodeManifest(f *testing.F) {
	f.Add(newManifest().encode())
	f.Add([]byte(`{"format":1,"tail":[{"k":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeManifest(data)
		if err != nil {
			if !errors.Is(err, history.ErrCorrupt) {
				t.Fatalf("decode error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := decodeManifest(m.encode())
		if err != nil || again.Generation != m.Generation || again.LastSeq != m.LastSeq || len(again.Tail) != len(m.Tail) {
			t.Fatalf("re-encoding changed the index: %+v vs %+v (%v)", again, m, err)
		}
	})
}

func FuzzParseDataKey(f *testing.F) {
	f.Add(sealedKey("e1-abc", 1, 2))
	f.Add(tailKey("e9-zz", 5, 5))
	f.Fuzz(func(t *testing.T, key string) {
		dk, ok := parseDataKey(key)
		if !ok {
			return
		}
		if dk.first == 0 || dk.last < dk.first {
			t.Fatalf("accepted %q with range %d-%d", key, dk.first, dk.last)
		}
	})
}
