package history

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// DecodeBudget bounds the memory that decoding stored objects takes at once, all reads of
// every store that shares it together. Stored bytes are untrusted (a decompression bomb
// inflates to its store's object limit), so each read bounds itself; the budget bounds how many
// of them run at once, so many hostile histories read together cost no more than the budget.
//
// A read asks for what decoding its object may take before it starts (the engine computes it
// from the object's stored and declared sizes) and gives it back when it is done. A read that
// does not fit waits, in arrival order among those that do not fit, while smaller reads that fit
// go ahead; it waits at most MaxWait and never past its context, and then fails with ErrBusy. A
// read asking for more than the whole budget waits until it has the budget to itself.
//
// Set one DecodeBudget on every store of a process (s3.Config, configmap.Config); it is safe for
// concurrent use. Its counters feed metrics and hold no content.
type DecodeBudget struct {
	size    int64
	maxWait time.Duration

	mu      sync.Mutex
	used    int64
	waiting []*budgetWaiter // in arrival order

	waits    atomic.Int64
	refusals atomic.Int64
}

// DefaultDecodeBudget is the budget of a store given none: room to decode two objects of the
// largest size (64 MiB, on S3) at once.
const DefaultDecodeBudget = 384 << 20

// DefaultDecodeWait is how long a read waits for the budget when NewDecodeBudget is given no
// wait: long enough for the reads ahead of it to decode objects of the largest size, short
// enough that a client's retry (after a 503) is the better use of its time.
const DefaultDecodeWait = 10 * time.Second

type budgetWaiter struct {
	n       int64
	granted chan struct{} // closed once the bytes are the waiter's
}

// NewDecodeBudget returns a budget of size bytes (at least 1) whose reads wait at most maxWait
// (DefaultDecodeWait when zero or negative).
func NewDecodeBudget(size int64, maxWait time.Duration) *DecodeBudget {
	if maxWait <= 0 {
		maxWait = DefaultDecodeWait
	}
	return &DecodeBudget{size: max(size, 1), maxWait: maxWait}
}

// DecodeBudgetStats is what a budget reports to metrics.
type DecodeBudgetStats struct {
	// Size is the budget; InUse the bytes held by reads decoding now.
	Size, InUse int64
	// Waits counts reads that had to wait; Refusals those that failed with ErrBusy.
	Waits, Refusals int64
}

// Stats returns the budget's size, use and counters.
func (b *DecodeBudget) Stats() DecodeBudgetStats {
	b.mu.Lock()
	used := b.used
	b.mu.Unlock()
	return DecodeBudgetStats{Size: b.size, InUse: used, Waits: b.waits.Load(), Refusals: b.refusals.Load()}
}

// Acquire takes n bytes of the budget (all of it when n is larger) and returns the function
// that gives them back; call it once decoding is done. It fails with an error wrapping ErrBusy
// (and the context's error, when the context ended first) when the bytes could not be had in
// time; nothing is held then.
func (b *DecodeBudget) Acquire(ctx context.Context, n int64) (release func(), err error) {
	n = min(max(n, 0), b.size)
	b.mu.Lock()
	if b.used+n <= b.size {
		b.used += n
		b.mu.Unlock()
		return b.releaser(n), nil
	}
	w := &budgetWaiter{n: n, granted: make(chan struct{})}
	b.waiting = append(b.waiting, w)
	b.mu.Unlock()
	b.waits.Add(1)

	timer := time.NewTimer(b.maxWait)
	defer timer.Stop()
	var cause error
	select {
	case <-w.granted:
		return b.releaser(n), nil
	case <-ctx.Done():
		cause = ctx.Err()
	case <-timer.C:
	}
	b.mu.Lock()
	select {
	case <-w.granted: // granted while giving up: keep it
		b.mu.Unlock()
		return b.releaser(n), nil
	default:
	}
	b.removeLocked(w)
	b.grantLocked() // a large waiter leaving may let smaller ones fit
	b.mu.Unlock()
	b.refusals.Add(1)
	if cause != nil {
		return nil, fmt.Errorf("%w: waited for %d bytes of the decode budget: %w", ErrBusy, n, cause)
	}
	return nil, fmt.Errorf("%w: waited %s for %d bytes of the decode budget of %d", ErrBusy, b.maxWait, n, b.size)
}

func (b *DecodeBudget) releaser(n int64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.used -= n
			b.grantLocked()
			b.mu.Unlock()
		})
	}
}

// grantLocked gives the budget to the waiters that fit, in arrival order.
func (b *DecodeBudget) grantLocked() {
	kept := b.waiting[:0]
	for _, w := range b.waiting {
		if b.used+w.n <= b.size {
			b.used += w.n
			close(w.granted)
			continue
		}
		kept = append(kept, w)
	}
	clear(b.waiting[len(kept):])
	b.waiting = kept
}

func (b *DecodeBudget) removeLocked(w *budgetWaiter) {
	for i, o := range b.waiting {
		if o == w {
			b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
			return
		}
	}
}
