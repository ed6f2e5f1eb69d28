package historytest

import (
	"context"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

// rawObjects reaches below the Store API, to corrupt objects or find
// leftovers. Every backend is built on the engine, which offers this.
func rawObjects(t *testing.T, s history.Store, name string) engine.Objects {
	t.Helper()
	r, ok := s.(interface {
		ObjectsOf(name string) (engine.Objects, error)
	})
	if !ok {
		t.Fatalf("store %T gives no raw access to its objects", s)
	}
	o, err := r.ObjectsOf(name)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func rawKeys(t *testing.T, s history.Store, name string) []string {
	t.Helper()
	infos, err := rawObjects(t, s, name).List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, len(infos))
	for i, info := range infos {
		keys[i] = info.Key
	}
	return keys
}

// tailObjectsBeyond lists tail objects that end past the committed head:
// writes whose index move never happened.
func tailObjectsBeyond(t *testing.T, s history.Store, name string, h history.History) []string {
	t.Helper()
	head, err := h.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, key := range rawKeys(t, s, name) {
		if last, ok := engine.TailLast(key); ok && last > head.Sequence {
			out = append(out, key)
		}
	}
	return out
}

// waitBackground waits until the store has no seal running in the background, so that what
// a test lists or deletes next is not raced by one.
func waitBackground(s history.Store) {
	if w, ok := s.(interface{ WaitBackground() }); ok {
		w.WaitBackground()
	}
}

// flipByte rewrites an object with one byte changed. Objects may be
// immutable in the backend, so it deletes and creates.
func flipByte(t *testing.T, s history.Store, name, key string, at int) {
	t.Helper()
	o := rawObjects(t, s, name)
	ctx := context.Background()
	data, _, err := o.Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	data[at%len(data)] ^= 0x01
	if err := o.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Create(ctx, key, data); err != nil {
		t.Fatal(err)
	}
}
