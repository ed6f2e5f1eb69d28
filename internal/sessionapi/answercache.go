package sessionapi

import (
	"container/list"
	"sync"
)

// answerCache keeps encoded answers by key, least recently used first out, within a bound in
// bytes. An answer larger than the bound is not kept. A bound of zero or less keeps nothing. The bytes it returns are shared:
// callers only read them.
type answerCache struct {
	limit int64

	mu    sync.Mutex
	used  int64
	order *list.List // of *cachedAnswer, most recently used at the front
	byKey map[answerKey]*list.Element
}

type cachedAnswer struct {
	key   answerKey
	value any
	size  int64
}

func newAnswerCache(limit int64) *answerCache {
	return &answerCache{limit: limit, order: list.New(), byKey: map[answerKey]*list.Element{}}
}

func (c *answerCache) get(key answerKey) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedAnswer).value, true
}

// put keeps value, which holds n bytes, under key.
func (c *answerCache) put(key answerKey, value any, n int64) {
	if n > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.remove(e)
	}
	for c.used+n > c.limit {
		c.remove(c.order.Back())
	}
	c.byKey[key] = c.order.PushFront(&cachedAnswer{key: key, value: value, size: n})
	c.used += n
}

func (c *answerCache) remove(e *list.Element) {
	a := c.order.Remove(e).(*cachedAnswer)
	delete(c.byKey, a.key)
	c.used -= a.size
}

// bytes is what the kept answers hold.
func (c *answerCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
