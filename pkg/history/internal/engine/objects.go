// Package engine implements history.Store once, on top of a small object
// interface that each backend (ConfigMaps, S3, memory) provides. The log
// protocol, group commit, sealing, epochs and checkpoints live here so every
// backend behaves the same way; docs/storage.md describes the protocol.
package engine

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ObjectInfo describes one stored object in a listing.
type ObjectInfo struct {
	Key  string
	Size int64
}

// Objects are the objects of one conversation. Keys are short strings of
// lowercase letters, digits, '-' and '.'. Errors wrap history.ErrNotFound,
// history.ErrConflict, history.ErrTooLarge or history.ErrUnavailable.
type Objects interface {
	// Get returns an object's bytes and its version (ErrNotFound when absent).
	Get(ctx context.Context, key string) (data []byte, version string, err error)
	// Create writes an object that must not exist yet (ErrConflict when it does).
	Create(ctx context.Context, key string, data []byte) (version string, err error)
	// Replace overwrites an object only if its version is still version
	// (ErrConflict otherwise, ErrNotFound when it is gone).
	Replace(ctx context.Context, key string, data []byte, version string) (newVersion string, err error)
	// Delete removes an object; a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// List returns the objects whose key starts with prefix, in key order.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
}

// Backend opens the objects of one conversation.
type Backend interface {
	Objects(name string, owner *metav1.OwnerReference) (Objects, error)
}

// ownedObjects are a handle's objects; a handle opened without an owner
// takes one when a later Open of the shared handle gives it.
type ownedObjects struct {
	cur      atomic.Pointer[objectsRef]
	hasOwner atomic.Bool
}

type objectsRef struct{ Objects }

func newOwnedObjects(o Objects, owned bool) *ownedObjects {
	oo := &ownedObjects{}
	oo.cur.Store(&objectsRef{o})
	oo.hasOwner.Store(owned)
	return oo
}

// adopt switches to objects that carry the owner, once.
func (o *ownedObjects) adopt(open func() (Objects, error)) error {
	if o.hasOwner.Load() {
		return nil
	}
	objects, err := open()
	if err != nil {
		return err
	}
	o.cur.Store(&objectsRef{objects})
	o.hasOwner.Store(true)
	return nil
}

func (o *ownedObjects) get() Objects { return o.cur.Load().Objects }

func (o *ownedObjects) Get(ctx context.Context, key string) ([]byte, string, error) {
	return o.get().Get(ctx, key)
}

func (o *ownedObjects) Create(ctx context.Context, key string, data []byte) (string, error) {
	return o.get().Create(ctx, key, data)
}

func (o *ownedObjects) Replace(ctx context.Context, key string, data []byte, version string) (string, error) {
	return o.get().Replace(ctx, key, data, version)
}

func (o *ownedObjects) Delete(ctx context.Context, key string) error { return o.get().Delete(ctx, key) }

func (o *ownedObjects) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	return o.get().List(ctx, prefix)
}
