package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/parley-dev/parley/pkg/history"
)

// ownerBackend records, for every object written, whether the objects it was written through
// were opened with an owner: a backend puts the owner on what it writes (the ConfigMap backend
// an owner reference, which garbage collection follows).
type ownerBackend struct {
	hookBackend
	mu     sync.Mutex
	writes map[string]bool // key → written with an owner
}

func (b *ownerBackend) Objects(name string, owner *metav1.OwnerReference) (Objects, error) {
	o, err := b.hookBackend.Objects(name, owner)
	if err != nil {
		return nil, err
	}
	return ownerObjects{Objects: o, b: b, owned: owner != nil}, nil
}

func (b *ownerBackend) wrote(key string, owned bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.writes == nil {
		b.writes = map[string]bool{}
	}
	b.writes[key] = owned
}

func (b *ownerBackend) takeWrites() map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.writes
	b.writes = nil
	return w
}

type ownerObjects struct {
	Objects
	b     *ownerBackend
	owned bool
}

func (o ownerObjects) Create(ctx context.Context, key string, data []byte) (string, error) {
	o.b.wrote(key, o.owned)
	return o.Objects.Create(ctx, key, data)
}

func (o ownerObjects) Replace(ctx context.Context, key string, data []byte, version string) (string, error) {
	o.b.wrote(key, o.owned)
	return o.Objects.Replace(ctx, key, data, version)
}

// Handles are shared per store: a process that opened a history without an owner (to read
// it) and then opens it with the owner (to append) writes with the owner from then on, or
// garbage collection would never remove what it writes. (The ConfigMap backend's
// TestOwnerGivenOnLaterOpen checks the owner references on a real API server.)
func TestOwnerGivenOnLaterOpen(t *testing.T) {
	ctx := context.Background()
	owner := &metav1.OwnerReference{APIVersion: "parley.dev/v1alpha1", Kind: "Conversation", Name: convName, UID: "uid-1"}
	b := &ownerBackend{}
	creator, s := New(b, Options{}), New(b, Options{MaxOpenBytes: 2}) // s: every append writes a tail object
	t.Cleanup(func() { _ = creator.Close(); _ = s.Close() })
	if _, err := creator.Open(ctx, convName, history.OpenOptions{Create: true, Owner: owner}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Open(ctx, convName, history.OpenOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.Open(ctx, convName, history.OpenOptions{Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	b.takeWrites()
	for i := range 3 {
		appendOne(t, h, fmt.Sprintf("m-%d", i))
	}
	if _, err := h.PutCheckpoint(ctx, []byte("state")); err != nil {
		t.Fatal(err)
	}
	writes := b.takeWrites()
	if len(writes) < 5 { // the index, three tail objects, the checkpoint
		t.Fatalf("%d objects written, want the index, 3 tail objects and a checkpoint: %v", len(writes), writes)
	}
	for key, owned := range writes {
		if !owned {
			t.Errorf("%s written without the owner", key)
		}
	}
}
