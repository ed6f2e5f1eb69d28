package engine

import (
	"container/list"
	"sync"

	"github.com/parley-dev/parley/pkg/history"
)

// objectCache keeps recently used decoded segments and tail objects. They
// are immutable, so a cached copy never goes stale; it only saves reads.
type objectCache struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	order   *list.List // front: most recent
	entries map[string]*list.Element
}

type cached struct {
	key     string
	entries []history.Entry
	size    int64
}

func newObjectCache(budget int64) *objectCache {
	return &objectCache{budget: budget, order: list.New(), entries: map[string]*list.Element{}}
}

func (c *objectCache) get(key string) ([]history.Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cached).entries, true
}

func (c *objectCache) put(key string, entries []history.Entry, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; ok || size > c.budget {
		return
	}
	c.entries[key] = c.order.PushFront(&cached{key: key, entries: entries, size: size})
	c.used += size
	for c.used > c.budget {
		last := c.order.Back()
		v := last.Value.(*cached)
		c.order.Remove(last)
		delete(c.entries, v.key)
		c.used -= v.size
	}
}

// scopedCache is one conversation's view of the store's cache.
type scopedCache struct {
	c      *objectCache
	prefix string
}

func (s scopedCache) get(key string) ([]history.Entry, bool) { return s.c.get(s.prefix + key) }

// put keeps entries, counted at the memory they take (not at their stored size: a compressed
// segment takes many times its size once decoded).
func (s scopedCache) put(key string, entries []history.Entry) {
	s.c.put(s.prefix+key, entries, footprint(entries))
}

// entryOverhead approximates what one cached entry takes besides its id and data: the Entry
// itself and the allocations behind its two slices.
const entryOverhead = 64

func footprint(entries []history.Entry) int64 {
	n := int64(len(entries)) * entryOverhead
	for _, e := range entries {
		n += int64(len(e.ID) + len(e.Data))
	}
	return n
}

// sealedLists caches, per epoch tag, the parsed keys of sealed segments.
type sealedLists struct {
	mu    sync.Mutex
	byTag map[string][]dataKey
}

func (s *sealedLists) get(tag string) ([]dataKey, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys, ok := s.byTag[tag]
	return keys, ok
}

func (s *sealedLists) set(tag string, keys []dataKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byTag == nil {
		s.byTag = map[string][]dataKey{}
	}
	s.byTag[tag] = keys
}

func (s *sealedLists) forget(tag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byTag, tag)
}
