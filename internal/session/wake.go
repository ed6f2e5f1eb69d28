package session

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// wakeConcurrency bounds the wakes served at once: on a replica that does not run the
// controller each is a status patch, and a thousand conversations woken together must not
// become a thousand concurrent requests to the API server.
const wakeConcurrency = 8

// Wake hurries the activity of a conversation whose agent sleeps (suspended while idle): the
// append that wakes it should not wait out the batch interval before the reconcile, which
// starts the agent, hears of it. The wake goes the same way as any activity (handed to the
// local reconcile, or one lastActivityTime patch elsewhere), only now instead of at the next
// flush: it costs the API server nothing the append would not have cost anyway.
//
// Wakes queue in arrival order, each conversation once, and are served by wakeConcurrency
// workers, so many at once are bounded and none waits behind a later one. Call it after the
// append's Touch or TouchAt; a wake whose activity was flushed meanwhile has nothing left to do.
func (a *Activity) Wake(conv *parleyv1alpha1.Conversation) {
	a.wakeQueue().push(client.ObjectKeyFromObject(conv))
}

// serveWakes runs the wake workers until ctx ends.
func (a *Activity) serveWakes(ctx context.Context) {
	q := a.wakeQueue()
	var wg sync.WaitGroup
	for range wakeConcurrency {
		wg.Go(func() {
			for {
				key, ok := q.pop(ctx)
				if !ok {
					return
				}
				a.flushOne(ctx, key)
			}
		})
	}
	wg.Wait()
}

// flushOne hands over or writes the pending activity of one conversation now.
func (a *Activity) flushOne(ctx context.Context, key types.NamespacedName) {
	a.mu.Lock()
	p, ok := a.pending[key]
	delete(a.pending, key)
	a.mu.Unlock()
	if !ok {
		return // flushed already: the reconcile is on its way
	}
	if a.isLocal() && a.handOff(key, p.at, p.head) {
		return
	}
	a.write(ctx, key, p.at)
}

func (a *Activity) wakeQueue() *wakeQueue {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.woken == nil {
		a.woken = &wakeQueue{queued: map[types.NamespacedName]bool{}, ready: make(chan struct{}, 1)}
	}
	return a.woken
}

// wakeQueue is a FIFO of conversations to wake, each at most once.
type wakeQueue struct {
	mu     sync.Mutex
	order  []types.NamespacedName
	queued map[types.NamespacedName]bool
	// ready holds a token while the queue may be non-empty.
	ready chan struct{}
}

func (q *wakeQueue) push(key types.NamespacedName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queued[key] {
		return
	}
	q.queued[key] = true
	q.order = append(q.order, key)
	q.signal()
}

// pop takes the oldest wake, waiting for one until ctx ends.
func (q *wakeQueue) pop(ctx context.Context) (types.NamespacedName, bool) {
	for {
		q.mu.Lock()
		if len(q.order) > 0 {
			key := q.order[0]
			q.order = q.order[1:]
			delete(q.queued, key)
			if len(q.order) > 0 {
				q.signal() // another worker may take the next
			}
			q.mu.Unlock()
			return key, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return types.NamespacedName{}, false
		case <-q.ready:
		}
	}
}

func (q *wakeQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}
