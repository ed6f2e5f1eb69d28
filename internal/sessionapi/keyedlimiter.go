package sessionapi

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/cache"
)

// maxLimiterKeys bounds the buckets one keyedLimiter keeps: callers that vary a key (source
// addresses, names) cannot grow the map without bound.
const maxLimiterKeys = 50_000

// keyedLimiter is a token bucket per key (a conversation, an identity, a source address), kept
// in an LRU cache so that it stays bounded: a bucket unused long enough to refill completely is
// the same as a new one and expires, and past maxKeys the least recently used bucket goes (it
// starts full when its key returns, as it nearly would have).
type keyedLimiter struct {
	rate  Rate
	clock clockFunc

	// mu makes a lookup and the store of a new bucket one step: two first requests of a key
	// must not each get a full bucket of their own.
	mu      sync.Mutex
	buckets *cache.LRUExpireCache // key -> *rate.Limiter
}

func newKeyedLimiter(r Rate, maxKeys int, clock clockFunc) *keyedLimiter {
	return &keyedLimiter{rate: r, clock: clock, buckets: cache.NewLRUExpireCacheWithClock(maxKeys, clock)}
}

// take takes one token from key's bucket now and says how long to wait when there is none
// (zero: go ahead). A nil or disabled limiter always says go ahead.
func (k *keyedLimiter) take(key string) time.Duration { return k.takeN(key, 1) }

// takeN is take for n tokens at once. An n larger than the burst takes the whole burst: a
// full bucket admits it, and the bucket is empty after it.
func (k *keyedLimiter) takeN(key string, n int) time.Duration {
	wait, _ := k.reserveN(key, n, k.clock())
	return wait
}

// reserveN is takeN at now, for a charge to several buckets at once: when the tokens are
// there it takes them and returns undo, which puts them back (at the same now: a charge
// another bucket refused costs this one nothing); when they are not it takes none and says
// how long to wait. undo is never nil.
func (k *keyedLimiter) reserveN(key string, n int, now time.Time) (wait time.Duration, undo func()) {
	if k == nil || k.rate.PerSecond <= 0 {
		return 0, func() {}
	}
	n = min(max(n, 1), max(k.rate.Burst, 1))
	k.mu.Lock()
	defer k.mu.Unlock()
	r := k.bucket(key).ReserveN(now, n)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, func() {}
	}
	return 0, func() { r.CancelAt(now) }
}

// owed says how long key's bucket stays in debt (zero: it is not in debt): a caller that spent
// more than it had waits that long before it is charged again.
func (k *keyedLimiter) owed(key string) time.Duration {
	if k == nil || k.rate.PerSecond <= 0 {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.buckets.Get(key)
	if !ok {
		return 0 // a bucket expires only once full
	}
	tokens := v.(*rate.Limiter).TokensAt(k.clock())
	if tokens >= 0 {
		return 0
	}
	return time.Duration(-tokens / k.rate.PerSecond * float64(time.Second))
}

// spend takes n tokens from key's bucket after the fact, into debt when it has fewer: for work
// whose cost is known only once it is done. An n larger than the burst takes the burst.
func (k *keyedLimiter) spend(key string, n int) {
	if k == nil || k.rate.PerSecond <= 0 {
		return
	}
	n = min(max(n, 1), max(k.rate.Burst, 1))
	k.mu.Lock()
	defer k.mu.Unlock()
	_ = k.bucket(key).ReserveN(k.clock(), n) // kept: the debt is what the next charge waits for
}

// bucket is key's bucket, made full when it has none, marked used now: it expires a refill
// from now. k.mu must be held.
func (k *keyedLimiter) bucket(key string) *rate.Limiter {
	var limiter *rate.Limiter
	if v, ok := k.buckets.Get(key); ok {
		limiter = v.(*rate.Limiter)
	} else {
		limiter = rate.NewLimiter(rate.Limit(k.rate.PerSecond), max(k.rate.Burst, 1))
	}
	k.buckets.Add(key, limiter, k.rate.refill())
	return limiter
}

// size is how many buckets are kept and not expired.
func (k *keyedLimiter) size() int { return len(k.buckets.Keys()) }
