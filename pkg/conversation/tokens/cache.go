package tokens

import "sync"

// cacheKey identifies one version of one message: the id alone is not enough, because a
// streamed message grows under the same id.
type cacheKey struct {
	id   string
	hash uint64
}

// countCache is a bounded, concurrency-safe map from message versions to token counts.
//
// It keeps two generations: entries are written to the young one; when it is full the old one
// is dropped and the young one becomes old. A hit in the old generation is copied forward, so
// entries in use survive and the cache holds at most 2×half entries without per-entry
// bookkeeping (an LRU list would cost a pointer chase and a lock-held write on every hit).
type countCache struct {
	mu    sync.Mutex
	half  int
	young map[cacheKey]int
	old   map[cacheKey]int
}

func newCountCache(capacity int) *countCache {
	half := max(capacity/2, 1)
	return &countCache{half: half, young: make(map[cacheKey]int, half)}
}

func (c *countCache) get(key cacheKey) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.young[key]; ok {
		return n, true
	}
	n, ok := c.old[key]
	if ok {
		c.putLocked(key, n)
	}
	return n, ok
}

func (c *countCache) put(key cacheKey, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(key, n)
}

func (c *countCache) putLocked(key cacheKey, n int) {
	if len(c.young) >= c.half {
		c.old = c.young
		c.young = make(map[cacheKey]int, c.half)
	}
	c.young[key] = n
}

// len reports the number of distinct entries held (for tests).
func (c *countCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.young)
	for k := range c.old {
		if _, dup := c.young[k]; !dup {
			n++
		}
	}
	return n
}
