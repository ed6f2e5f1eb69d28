package sessionapi

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxLimiterKeys bounds the buckets one keyedLimiter keeps: callers that vary a key (source
// addresses, names) cannot grow the map without bound.
const maxLimiterKeys = 50_000

// keyedLimiter is a token bucket per key (a conversation, an identity, a source address).
// Its map stays bounded: a bucket unused long enough to refill completely is the same as a
// new one and is dropped, and past max keys the least recently used bucket goes (it starts
// full when its key returns, as it nearly would have).
type keyedLimiter struct {
	rate Rate
	max  int

	mu    sync.Mutex
	order list.List // *bucket, most recently used first
	byKey map[string]*list.Element
}

type bucket struct {
	key     string
	limiter *rate.Limiter
	used    time.Time
}

func newKeyedLimiter(r Rate, maxKeys int) *keyedLimiter {
	return &keyedLimiter{rate: r, max: maxKeys, byKey: map[string]*list.Element{}}
}

// take takes one token from key's bucket at now and says how long to wait when there is none
// (zero: go ahead). A nil or disabled limiter always says go ahead.
func (k *keyedLimiter) take(key string, now time.Time) time.Duration {
	if k == nil || k.rate.PerSecond <= 0 {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.prune(now)
	var b *bucket
	if e, ok := k.byKey[key]; ok {
		b = e.Value.(*bucket)
		k.order.MoveToFront(e)
	} else {
		b = &bucket{key: key, limiter: rate.NewLimiter(rate.Limit(k.rate.PerSecond), max(k.rate.Burst, 1))}
		k.byKey[key] = k.order.PushFront(b)
		for k.order.Len() > k.max {
			k.remove(k.order.Back())
		}
	}
	b.used = now
	r := b.limiter.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// prune drops the buckets idle long enough to be full again, oldest first.
func (k *keyedLimiter) prune(now time.Time) {
	idle := k.rate.refill()
	for e := k.order.Back(); e != nil && now.Sub(e.Value.(*bucket).used) >= idle; e = k.order.Back() {
		k.remove(e)
	}
}

func (k *keyedLimiter) remove(e *list.Element) {
	delete(k.byKey, e.Value.(*bucket).key)
	k.order.Remove(e)
}

// size is how many buckets are kept.
func (k *keyedLimiter) size() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.byKey)
}
