package sessionapi

import "sync"

// budget bounds an amount held at once (requests, body bytes, streams) in all and per key.
// A bound of zero or less is no bound. Keys holding nothing are forgotten, so its map is as
// small as what is held.
type budget struct {
	total, perKey int64

	mu    sync.Mutex
	used  int64
	byKey map[string]int64
}

// refusal says which bound refused an acquire.
type refusal int

const (
	admitted  refusal = iota
	overKey           // the key's own share is used up: 429
	overTotal         // the replica's is: 503
)

func newBudget(total, perKey int64) *budget {
	return &budget{total: total, perKey: perKey, byKey: map[string]int64{}}
}

// acquire takes n for key, unless that would pass a bound.
func (b *budget) acquire(key string, n int64) refusal { return b.take(key, n, false) }

// acquireAlone is acquire, except that an amount larger than a bound is taken while nothing
// is held under that bound: one answer larger than the bounds is still served, alone.
func (b *budget) acquireAlone(key string, n int64) refusal { return b.take(key, n, true) }

func (b *budget) take(key string, n int64, alone bool) refusal {
	if b == nil {
		return admitted
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.perKey > 0 && b.byKey[key]+n > b.perKey && (!alone || b.byKey[key] > 0):
		return overKey
	case b.total > 0 && b.used+n > b.total && (!alone || b.used > 0):
		return overTotal
	}
	b.used += n
	b.byKey[key] += n
	return admitted
}

// release gives back what acquire or acquireAlone took.
func (b *budget) release(key string, n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.byKey[key] -= n; b.byKey[key] <= 0 {
		delete(b.byKey, key)
	}
}
