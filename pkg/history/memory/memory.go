// Package memory is an in-process history.Store for unit tests of other
// packages. It runs the same engine as the ConfigMap and S3 backends, over a
// map, and passes the same conformance suite; nothing survives the process.
package memory

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

// Options tune the in-memory store; zero values give small seals so tests
// exercise sealing quickly.
type Options struct {
	// SealBytes and MaxTailObjects: see the S3 backend's options.
	SealBytes      int64
	MaxTailObjects int
	// MaxHistoryBytes caps a conversation's payload; 0: no cap.
	MaxHistoryBytes int64
	// CompressSegments gzips sealed segments.
	CompressSegments bool
}

// New returns an empty in-memory store.
func New(opts Options) history.Store {
	return newStore(&backend{conversations: map[string]*objects{}, opts: opts})
}

// Reopen returns a second store over the same data as s, as another process
// would see it: no handles, caches or group commits are shared. s must come
// from New.
func Reopen(s history.Store) history.Store {
	return newStore(s.(*engine.Store).Backend().(*backend))
}

func newStore(b *backend) *engine.Store {
	return engine.New(b, engine.Options{
		MaxObjectBytes:   64 << 20,
		SealBytes:        b.opts.SealBytes,
		MaxTailObjects:   b.opts.MaxTailObjects,
		MaxHistoryBytes:  b.opts.MaxHistoryBytes,
		CompressSegments: b.opts.CompressSegments,
	})
}

type backend struct {
	opts          Options
	mu            sync.Mutex
	conversations map[string]*objects
}

func (b *backend) Objects(name string, _ *metav1.OwnerReference) (engine.Objects, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.conversations[name]
	if !ok {
		o = &objects{items: map[string]item{}}
		b.conversations[name] = o
	}
	return o, nil
}

type item struct {
	data    []byte
	version uint64
}

type objects struct {
	mu      sync.Mutex
	items   map[string]item
	version uint64
}

func (o *objects) Get(ctx context.Context, key string) ([]byte, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	it, ok := o.items[key]
	if !ok {
		return nil, "", fmt.Errorf("%s: %w", key, history.ErrNotFound)
	}
	return append([]byte(nil), it.data...), strconv.FormatUint(it.version, 10), nil
}

func (o *objects) Create(ctx context.Context, key string, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.items[key]; ok {
		return "", fmt.Errorf("%s exists: %w", key, history.ErrConflict)
	}
	return o.put(key, data), nil
}

func (o *objects) Replace(ctx context.Context, key string, data []byte, version string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	it, ok := o.items[key]
	if !ok {
		return "", fmt.Errorf("%s: %w", key, history.ErrNotFound)
	}
	if strconv.FormatUint(it.version, 10) != version {
		return "", fmt.Errorf("%s changed: %w", key, history.ErrConflict)
	}
	return o.put(key, data), nil
}

func (o *objects) put(key string, data []byte) string {
	o.version++
	o.items[key] = item{data: append([]byte(nil), data...), version: o.version}
	return strconv.FormatUint(o.version, 10)
}

func (o *objects) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.items, key)
	return nil
}

func (o *objects) List(ctx context.Context, prefix string) ([]engine.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []engine.ObjectInfo
	for key, it := range o.items {
		if strings.HasPrefix(key, prefix) {
			out = append(out, engine.ObjectInfo{Key: key, Size: int64(len(it.data))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
