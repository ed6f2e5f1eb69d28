package historytest

import (
	"context"
	"errors"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// testObjectPrimitives checks the backend's compare-and-swap primitives
// directly; the whole protocol rests on them.
func testObjectPrimitives(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	s := newStore(t, hn)
	open(t, s, name)
	o := rawObjects(t, s, name)
	const key = "e1-primit.t.000000000001-000000000001.testtest"
	v1, err := o.Create(ctx, key, []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Create(ctx, key, []byte("two")); !errors.Is(err, history.ErrConflict) {
		t.Fatalf("create of an existing object: %v, want ErrConflict", err)
	}
	// Contents differ on every replace, as the engine guarantees with the
	// index's generation: S3 ETags are content hashes.
	_, ver, err := o.Get(ctx, "index")
	if err != nil {
		t.Fatal(err)
	}
	ver2, err := o.Replace(ctx, "index", []byte(`{"generation":1}`), ver)
	if err != nil {
		t.Fatalf("replace with the current version: %v", err)
	}
	if _, err := o.Replace(ctx, "index", []byte(`{"generation":2}`), ver); !errors.Is(err, history.ErrConflict) {
		t.Fatalf("replace with a stale version: %v, want ErrConflict", err)
	}
	if _, got, err := o.Get(ctx, "index"); err != nil || got != ver2 {
		t.Fatalf("version after replace %q, want %q (%v)", got, ver2, err)
	}
	if data, v, err := o.Get(ctx, key); err != nil || string(data) != "one" || v != v1 {
		t.Fatalf("get: %q %q %v", data, v, err)
	}
	if err := o.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.Get(ctx, key); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
	if err := o.Delete(ctx, key); err != nil {
		t.Fatalf("delete of a missing object: %v", err)
	}
}
