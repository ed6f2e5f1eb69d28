package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/parley-dev/parley/pkg/history"
)

// Store implements history.Store over a Backend.
type Store struct {
	backend Backend
	opts    Options

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	handles  map[string]*log
	closed   bool
	counters counters
	cache    *objectCache
	// background counts the seals running in the background (background.go).
	background sync.WaitGroup
}

var _ history.Store = (*Store)(nil)

// New returns a store. Close it to stop its commit goroutines.
func New(backend Backend, opts Options) *Store {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{opts: opts.withDefaults(), ctx: ctx, cancel: cancel, handles: map[string]*log{}, cache: newObjectCache(cacheBudget)}
	s.backend = countingBackend{Backend: boundedBackend{Backend: backend, limit: s.opts.readLimit()}, c: &s.counters}
	return s
}

// Open implements history.Store.
func (s *Store) Open(ctx context.Context, name string, opts history.OpenOptions) (history.History, error) {
	if name == "" {
		return nil, errors.New("history: empty conversation name")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, history.ErrClosed
	}
	if h, ok := s.handles[name]; ok {
		s.mu.Unlock()
		if err := h.adoptOwner(opts.Owner); err != nil {
			return nil, err
		}
		return h, nil
	}
	s.mu.Unlock()

	objects, err := s.backend.Objects(name, opts.Owner)
	if err != nil {
		return nil, err
	}
	index, err := ensureIndex(ctx, objects, opts, s.decodeManifest)
	if err != nil {
		return nil, fmt.Errorf("open history %q: %w", name, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.handles[name]; ok {
		if err := h.adoptOwner(opts.Owner); err != nil {
			return nil, err
		}
		return h, nil
	}
	h := newLog(s, name, objects, opts.Owner != nil)
	// The index just read or written starts the writer's view, so the first
	// append does not read it again. It may be stale by then; so may any
	// view: the commit's compare-and-swap refuses it and the view reloads.
	if index.ok {
		h.m, h.ver, h.loaded = index.m, index.ver, true
		h.created = index.created
	}
	s.handles[name] = h
	return h, nil
}

// indexSeen is the index as ensureIndex read or created it; ok is false when
// it could not be decoded (reading it later reports why).
type indexSeen struct {
	m   manifest
	ver string
	ok  bool
	// created: this Open wrote the index, so the history was empty a moment ago.
	created bool
}

func seen(ctx context.Context, data []byte, ver string, decode manifestDecoder) indexSeen {
	m, err := decode(ctx, data)
	return indexSeen{m: m, ver: ver, ok: err == nil && ver != ""}
}

// ensureIndex finds the history's index, creating it when opts.Create allows
// and it is missing. With ProbablyNew it tries the create first.
func ensureIndex(ctx context.Context, objects Objects, opts history.OpenOptions, decode manifestDecoder) (indexSeen, error) {
	if !opts.Create || !opts.ProbablyNew {
		data, ver, err := objects.Get(ctx, indexKey)
		if err == nil {
			return seen(ctx, data, ver, decode), nil
		}
		if !errors.Is(err, history.ErrNotFound) || !opts.Create {
			return indexSeen{}, err
		}
	}
	m := newManifest()
	ver, err := objects.Create(ctx, indexKey, m.encode())
	if err == nil {
		return indexSeen{m: m, ver: ver, ok: ver != "", created: true}, nil
	}
	if !errors.Is(err, history.ErrConflict) {
		return indexSeen{}, err
	}
	// Created concurrently (or earlier, when ProbablyNew guessed wrong), or
	// (S3 409) being created by an upload that may still fail: only an
	// index that exists will do.
	data, ver, gerr := objects.Get(ctx, indexKey)
	if gerr != nil {
		if errors.Is(gerr, history.ErrNotFound) {
			return indexSeen{}, err
		}
		return indexSeen{}, gerr
	}
	return seen(ctx, data, ver, decode), nil
}

// Delete implements history.Store. The index goes first, so writers of
// other processes fail with ErrNotFound instead of committing into a
// history that is being removed.
func (s *Store) Delete(ctx context.Context, name string) error {
	s.mu.Lock()
	h := s.handles[name]
	delete(s.handles, name)
	s.mu.Unlock()
	if h != nil {
		h.markDeleted()
		h.quiesce()
	}
	objects, err := s.backend.Objects(name, nil)
	if err != nil {
		return err
	}
	if err := objects.Delete(ctx, indexKey); err != nil {
		return err
	}
	infos, err := objects.List(ctx, "")
	if err != nil {
		return err
	}
	for _, info := range infos {
		if err := objects.Delete(ctx, info.Key); err != nil {
			return err
		}
	}
	return nil
}

// Release implements history.Store.
func (s *Store) Release(name string) {
	s.mu.Lock()
	h := s.handles[name]
	delete(s.handles, name)
	s.mu.Unlock()
	if h != nil {
		h.markDeleted()
	}
}

// drop forgets h if it is still the handle of its conversation.
func (s *Store) drop(h *log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handles[h.name] == h {
		delete(s.handles, h.name)
	}
}

// Close implements history.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	handles := s.handles
	s.handles = map[string]*log{}
	s.mu.Unlock()
	s.cancel()
	for _, h := range handles {
		h.markDeleted()
	}
	return nil
}

// ObjectsOf gives tests raw access to a conversation's objects, to corrupt
// them or look for leftovers. The conformance suite finds it by interface.
func (s *Store) ObjectsOf(name string) (Objects, error) { return s.backend.Objects(name, nil) }

// CheckpointKey is the object key of a checkpoint, for tests.
func CheckpointKey(d history.Digest) string { return checkpointPrefix + d.Hex() }

// IsTailKey and IsSealedKey classify object keys, for tests.
func IsTailKey(key string) bool {
	dk, ok := parseDataKey(key)
	return ok && dk.tail
}

// IsSealedKey reports whether key names a sealed segment.
func IsSealedKey(key string) bool {
	dk, ok := parseDataKey(key)
	return ok && !dk.tail
}

// TailFirst returns the first sequence of a tail object's key, for tests.
func TailFirst(key string) (uint64, bool) {
	dk, ok := parseDataKey(key)
	return dk.first, ok && dk.tail
}

// TailLast returns the last sequence of a tail object's key, for tests.
func TailLast(key string) (uint64, bool) {
	dk, ok := parseDataKey(key)
	return dk.last, ok && dk.tail
}

// WaitBackground waits until no seal runs in the background, for tests that list or delete
// a history's objects and must not be raced by one. Call it while no append is in flight.
func (s *Store) WaitBackground() { s.background.Wait() }

// Backend returns the backend the store was built on.
func (s *Store) Backend() Backend {
	return s.backend.(countingBackend).Backend.(boundedBackend).Backend
}
