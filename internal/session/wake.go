package session

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
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
	a.wakeQueue().Add(client.ObjectKeyFromObject(conv))
}

// serveWakes runs the wake workers until ctx ends. A wake taken after that is left pending:
// Start's final flush writes it.
func (a *Activity) serveWakes(ctx context.Context) {
	q := a.wakeQueue()
	stop := context.AfterFunc(ctx, q.ShutDown)
	defer stop()
	var wg sync.WaitGroup
	for range wakeConcurrency {
		wg.Go(func() {
			for {
				key, shutdown := q.Get()
				if shutdown {
					return
				}
				if ctx.Err() == nil {
					a.flush(ctx, false, only(key))
				}
				q.Done(key)
			}
		})
	}
	wg.Wait()
}

// wakeQueue is the FIFO of conversations to wake: a workqueue holds each conversation once,
// queued or being served, and hands them out in arrival order. Without a rate limiter: a wake
// whose write fails is kept as pending activity, which the next flush retries an interval
// later, so the queue has no retries to space out; wakeConcurrency is the bound.
func (a *Activity) wakeQueue() workqueue.TypedInterface[types.NamespacedName] {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.woken == nil {
		a.woken = workqueue.NewTyped[types.NamespacedName]()
	}
	return a.woken
}
