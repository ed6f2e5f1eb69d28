package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history"
)

// Handoff is the Conversation reconciler's side of Activity: the activity this replica's Session
// API saw, handed to the reconcile so one status write carries lastActivityTime and the counts
// it refreshes. *Activity implements it; tests give the reconciler their own.
type Handoff interface {
	// Source wakes the reconcile of a conversation with activity handed over.
	Source() source.Source
	// Take removes and returns the activity handed over for key, with the head this replica's
	// writes of it left the history at when all of them told it, nil otherwise. The view may
	// stand behind that head (a write whose fold missed it); Live.Reached tells.
	Take(key types.NamespacedName) (at time.Time, head *history.Head, ok bool)
	// Restore gives back activity taken whose status write failed.
	Restore(key types.NamespacedName, at time.Time)
}

// DefaultActivityInterval is how long a conversation's activity waits, at most, before it
// is handed to the controller or written: the first append after a write starts the clock,
// later ones join it. A conversation that takes appends all the time is written about once
// per interval and an eighth, inside the status lag the Session API promises
// (docs/architecture.md).
const DefaultActivityInterval = 1250 * time.Millisecond

// activityTicks is how many times per interval the flush looks for conversations that are due:
// the deadlines of different conversations fall apart, so their status writes (the API
// server's dearest request here) spread over the interval instead of coming in one burst.
const activityTicks = 8

// handOffTimeout is how long activity handed to the controller may wait to be taken before the
// flush writes it itself (a controller queue backed up for that long gets the patch instead).
const handOffTimeout = 10 * time.Second

// flushConcurrency bounds the activity patches a flush has in flight.
const flushConcurrency = 8

// Activity batches status.lastActivityTime: appends mark a conversation active in memory, and
// every Interval each active conversation's time reaches status. It is the only status field
// the Session API writes (see docs/architecture.md, "Status field ownership").
//
// On a replica that runs the Conversation controller (Local closed) the time is handed to the
// reconcile it wakes, which writes it in its one status write beside the counts it refreshes:
// one status write per conversation and interval instead of two. Elsewhere one narrow merge
// patch per active conversation writes the time, and the controller's reconcile, woken by that
// write, refreshes the counts and the idle timer.
type Activity struct {
	Client   client.Client
	Interval time.Duration
	Now      func() time.Time
	// Local, once closed, says this replica runs the Conversation controller (it holds the
	// leader lease, or runs without election); nil: always patch.
	Local <-chan struct{}

	mu sync.Mutex
	// pending is the activity not flushed yet; handed, that handed to the controller and not
	// taken yet.
	pending map[types.NamespacedName]pendingActivity
	handed  map[types.NamespacedName]pendingActivity
	wakes   chan event.GenericEvent
	// woken queues the conversations whose sleeping agent an append wakes (Wake).
	woken workqueue.TypedInterface[types.NamespacedName]
}

// pendingActivity is activity waiting, to be flushed or to be taken by the controller: the
// latest time, since when it waits (pending: when the oldest of it was recorded, zero for due
// at once, e.g. a write to retry; handed over: when it was first handed), and the head its
// writes left.
type pendingActivity struct {
	at, since time.Time
	head      writtenHead
}

// join adds activity at, whose writes left head, to p; fresh: p holds none yet, and it waits
// from now.
func (p pendingActivity) join(at time.Time, head writtenHead, fresh bool, now time.Time) pendingActivity {
	if fresh {
		p.since = now
	}
	p.at = later(p.at, at)
	p.head = p.head.join(head, fresh)
	return p
}

// writtenHead is where this replica's writes of one batch of activity left the history: the
// furthest head, known only when every write of the batch told it (one that did not, or a
// new epoch in between, makes it unknown). The controller trusts the shared view at a known
// head instead of reading the store (see ConversationReconciler's summarise).
type writtenHead struct {
	head  history.Head
	known bool
}

// join is the head of the writes of w and then those of next; fresh: w holds no write yet.
func (w writtenHead) join(next writtenHead, fresh bool) writtenHead {
	if fresh {
		return next
	}
	if !w.known || !next.known || w.head.Epoch != next.head.Epoch {
		return writtenHead{}
	}
	if next.head.Sequence > w.head.Sequence {
		return next
	}
	return w
}

// Touch records activity on a conversation now, by a write that does not say where it left
// the history.
func (a *Activity) Touch(conv *parleyv1alpha1.Conversation) { a.touch(conv, writtenHead{}) }

// TouchAt records activity on a conversation now, by a write that left the history at head (and
// tried to fold what it wrote into the shared view: whether the view got there is Reached's
// to tell).
func (a *Activity) TouchAt(conv *parleyv1alpha1.Conversation, head history.Head) {
	a.touch(conv, writtenHead{head: head, known: true})
}

func (a *Activity) touch(conv *parleyv1alpha1.Conversation, head writtenHead) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil {
		a.pending = map[types.NamespacedName]pendingActivity{}
	}
	key, now := client.ObjectKeyFromObject(conv), a.now()
	p, ok := a.pending[key]
	a.pending[key] = p.join(now, head, !ok, now)
}

// NeedLeaderElection is false: every replica's appends count.
func (a *Activity) NeedLeaderElection() bool { return false }

// Start flushes each conversation's activity once it is Interval old, until ctx ends, and
// everything once more at the end.
func (a *Activity) Start(ctx context.Context) error {
	interval := a.interval()
	t := time.NewTicker(max(interval/activityTicks, 10*time.Millisecond))
	defer t.Stop()
	wakesDone := make(chan struct{})
	go func() {
		defer close(wakesDone)
		a.serveWakes(ctx)
	}()
	for {
		select {
		case <-ctx.Done():
			// The controller stops too: write what it has not taken, once the wakes have
			// stopped (a wake cut short gives its activity back as pending).
			<-wakesDone
			a.flush(context.WithoutCancel(ctx), true, everything)
			return nil
		case <-t.C:
			a.flush(ctx, false, recordedBy(a.now().Add(-interval)))
		}
	}
}

func (a *Activity) interval() time.Duration {
	if a.Interval <= 0 {
		return DefaultActivityInterval
	}
	return a.Interval
}

// Flush hands all pending activity times to the local controller, or writes them, however
// recent. A failed write is kept for the next flush.
func (a *Activity) Flush(ctx context.Context) { a.flush(ctx, false, everything) }

// due selects the pending activity a flush takes.
type due func(key types.NamespacedName, p pendingActivity) bool

// everything is all pending activity, however recent.
func everything(types.NamespacedName, pendingActivity) bool { return true }

// recordedBy is the activity recorded first at or before t.
func recordedBy(t time.Time) due {
	return func(_ types.NamespacedName, p pendingActivity) bool { return !p.since.After(t) }
}

// only is the activity of one conversation (a wake).
func only(key types.NamespacedName) due {
	return func(k types.NamespacedName, _ pendingActivity) bool { return k == key }
}

// flush hands over or writes the pending activity isDue selects, and writes what the controller
// has not taken within handOffTimeout; final, at shutdown, writes everything, the activity
// handed over and not taken included.
func (a *Activity) flush(ctx context.Context, final bool, isDue due) {
	a.mu.Lock()
	dueNow := map[types.NamespacedName]pendingActivity{}
	for key, p := range a.pending {
		if isDue(key, p) {
			dueNow[key] = p
			delete(a.pending, key)
		}
	}
	a.mu.Unlock()
	local := !final && a.isLocal()
	batch := map[types.NamespacedName]time.Time{}
	for key, p := range dueNow {
		if !local || !a.handOff(key, p.at, p.head) {
			batch[key] = p.at
		}
	}
	for key, at := range a.unclaimed(final) {
		batch[key] = later(batch[key], at)
	}
	// Concurrently, boundedly: with many active conversations, one patch after another on a
	// busy API server outlasted the interval and status lagged (docs/benchmarks.md).
	var g errgroup.Group
	g.SetLimit(flushConcurrency)
	for key, at := range batch {
		g.Go(func() error {
			a.write(ctx, key, at)
			return nil
		})
	}
	_ = g.Wait()
}

// +kubebuilder:rbac:groups=parley.dev,resources=conversations/status,verbs=patch

// write patches status.lastActivityTime; a failed write is kept for the next flush.
func (a *Activity) write(ctx context.Context, key types.NamespacedName, at time.Time) {
	conv := &parleyv1alpha1.Conversation{}
	conv.Namespace, conv.Name = key.Namespace, key.Name
	err := a.Client.Status().Patch(ctx, conv, client.RawPatch(types.MergePatchType, activityPatch(at)))
	if client.IgnoreNotFound(err) == nil {
		return
	}
	logf.FromContext(ctx).Error(err, "writing lastActivityTime", "conversation", key)
	a.keep(key, at, a.now()) // tried again an interval later, not at every check
}

// Source wakes the Conversation reconciler for the activity handed to it.
func (a *Activity) Source() source.Source {
	return source.Channel(a.wakeChannel(), &crhandler.EnqueueRequestForObject{})
}

// Take gives the reconciler the activity handed to it for key, if any: it writes the time
// with the status of that reconcile, or gives it back with Restore when that write fails. head
// is where this replica's writes of that activity left the history, when all of them said.
func (a *Activity) Take(key types.NamespacedName) (at time.Time, head *history.Head, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.handed[key]
	delete(a.handed, key)
	if ok && h.head.known {
		head = &h.head.head
	}
	return h.at, head, ok
}

// Restore returns activity the reconciler took but could not write: the next flush hands it
// over again, or writes it.
func (a *Activity) Restore(key types.NamespacedName, at time.Time) {
	a.keep(key, at, time.Time{}) // due at the next check: it waited its interval already
}

// keep puts activity back as pending, due an interval after since (zero: at the next check).
// Where its writes left the history is no longer known.
func (a *Activity) keep(key types.NamespacedName, at, since time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil {
		a.pending = map[types.NamespacedName]pendingActivity{}
	}
	if p, ok := a.pending[key]; ok && p.since.Before(since) {
		since = p.since // newer activity waiting already: it goes no later than its own deadline
	}
	a.pending[key] = pendingActivity{at: later(a.pending[key].at, at), since: since}
}

// handOff records activity for the controller and wakes it; false when the wake could not be
// queued (the flush then writes the time itself).
func (a *Activity) handOff(key types.NamespacedName, at time.Time, head writtenHead) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	wakes := a.wakeChannelLocked()
	conv := &parleyv1alpha1.Conversation{}
	conv.Namespace, conv.Name = key.Namespace, key.Name
	select {
	case wakes <- event.GenericEvent{Object: conv}:
	default:
		return false
	}
	if a.handed == nil {
		a.handed = map[types.NamespacedName]pendingActivity{}
	}
	h, ok := a.handed[key]
	a.handed[key] = h.join(at, head, !ok, a.now())
	return true
}

// unclaimed removes and returns the activity the controller has not taken within
// handOffTimeout (all of it when final).
func (a *Activity) unclaimed(final bool) map[types.NamespacedName]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[types.NamespacedName]time.Time{}
	now := a.now()
	for key, h := range a.handed {
		if final || now.Sub(h.since) >= handOffTimeout {
			out[key] = h.at
			delete(a.handed, key)
		}
	}
	return out
}

func (a *Activity) isLocal() bool {
	if a.Local == nil {
		return false
	}
	select {
	case <-a.Local:
		return true
	default:
		return false
	}
}

// wakeChannel is the channel Source reads; its buffer bounds the wakes not yet queued.
func (a *Activity) wakeChannel() chan event.GenericEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.wakeChannelLocked()
}

func (a *Activity) wakeChannelLocked() chan event.GenericEvent {
	if a.wakes == nil {
		a.wakes = make(chan event.GenericEvent, 1024)
	}
	return a.wakes
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
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
