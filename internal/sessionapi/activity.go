package sessionapi

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// DefaultActivityInterval is how often batched activity reaches Conversation status.
const DefaultActivityInterval = time.Second

// Activity batches status.lastActivityTime: appends mark a conversation active in memory, and
// every Interval one narrow merge patch per active conversation writes the time. It is the only
// status field the Session API writes (see docs/architecture.md, "Status field ownership"); the
// controller's next reconcile, woken by the write, refreshes the counts and the idle timer.
type Activity struct {
	Client   client.Client
	Interval time.Duration
	Now      func() time.Time

	mu      sync.Mutex
	pending map[types.NamespacedName]time.Time
}

// Touch records activity on a conversation now.
func (a *Activity) Touch(conv *parleyv1alpha1.Conversation) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil {
		a.pending = map[types.NamespacedName]time.Time{}
	}
	a.pending[client.ObjectKeyFromObject(conv)] = a.now()
}

// NeedLeaderElection is false: every replica's appends count.
func (a *Activity) NeedLeaderElection() bool { return false }

// Start flushes every Interval until ctx ends, and once more at the end.
func (a *Activity) Start(ctx context.Context) error {
	interval := a.Interval
	if interval <= 0 {
		interval = DefaultActivityInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			a.Flush(context.WithoutCancel(ctx))
			return nil
		case <-t.C:
			a.Flush(ctx)
		}
	}
}

// Flush writes the pending activity times. A failed write is kept for the next flush.
func (a *Activity) Flush(ctx context.Context) {
	a.mu.Lock()
	batch := a.pending
	a.pending = nil
	a.mu.Unlock()
	for key, at := range batch {
		patch := activityPatch(at)
		conv := &parleyv1alpha1.Conversation{}
		conv.Namespace, conv.Name = key.Namespace, key.Name
		if err := a.Client.Status().Patch(ctx, conv, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			logf.FromContext(ctx).Error(err, "writing lastActivityTime", "conversation", key)
			a.mu.Lock()
			if a.pending == nil {
				a.pending = map[types.NamespacedName]time.Time{}
			}
			if cur, ok := a.pending[key]; !ok || cur.Before(at) {
				a.pending[key] = at
			}
			a.mu.Unlock()
		}
	}
}

// activityPatch is the status patch for activity at t. The time keeps its fraction of a second:
// in whole seconds, activity after a flush but within the same second wrote the same value
// again, a patch that changes nothing and so wakes no reconcile, and the counts of the last
// appends stayed out of status until some other event.
func activityPatch(t time.Time) []byte {
	return fmt.Appendf(nil, `{"status":{"lastActivityTime":%q}}`, t.UTC().Format(time.RFC3339Nano))
}

func (a *Activity) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
