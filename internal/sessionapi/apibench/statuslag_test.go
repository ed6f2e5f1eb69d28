package apibench

import (
	"context"
	"slices"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/test/support/loadphase"
)

// statusLag measures the Session API's status feedback as a client sees it: for every
// acknowledged append, the time from its acknowledgement until a watch of the Conversations
// (the manager's informer) shows status.history.sequence covering it (the bound: 2 s).
type statusLag struct {
	mu sync.Mutex
	// pending are the acknowledged appends status does not show yet, per conversation, in
	// acknowledgement order (sequences increase: one writer per conversation, or several whose
	// acks may interleave, hence the scan rather than a pop from the front).
	pending map[string][]ack
	// shown is the highest sequence status has shown per conversation: an ack that arrives
	// after its status write (a client goroutine delayed) counts as shown at once.
	shown map[string]uint64
	lags  []time.Duration
}

type ack struct {
	seq uint64
	at  time.Time
}

func newStatusLag() *statusLag {
	return &statusLag{pending: map[string][]ack{}, shown: map[string]uint64{}}
}

// acked records an append of conv, acknowledged at time at, whose highest sequence is seq.
func (l *statusLag) acked(conv string, seq uint64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq <= l.shown[conv] {
		l.lags = append(l.lags, 0)
		return
	}
	l.pending[conv] = append(l.pending[conv], ack{seq: seq, at: at})
}

// observed records that the status of conv showed sequence seq at time at.
func (l *statusLag) observed(conv string, seq uint64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq <= l.shown[conv] {
		return
	}
	l.shown[conv] = seq
	left := l.pending[conv][:0]
	for _, a := range l.pending[conv] {
		if a.seq <= seq {
			l.lags = append(l.lags, at.Sub(a.at))
		} else {
			left = append(left, a)
		}
	}
	l.pending[conv] = left
}

// follow observes the Conversations through the manager's informer until the returned stop
// is called. The manager watches Conversations anyway: measuring the feedback this way adds
// no watch of its own to the API server's and this process's load during the phases.
func (l *statusLag) follow(ctx context.Context, informers cache.Informers) (stop func(), err error) {
	inf, err := informers.GetInformer(ctx, &parleyv1alpha1.Conversation{})
	if err != nil {
		return nil, err
	}
	see := func(obj any) {
		conv, ok := obj.(*parleyv1alpha1.Conversation)
		if ok && conv.Namespace == namespace && conv.Status.History != nil {
			l.observed(conv.Name, uint64(conv.Status.History.Sequence), time.Now())
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
	})
	if err != nil {
		return nil, err
	}
	return func() { _ = inf.RemoveEventHandler(reg) }, nil
}

// report returns the lags (loadphase's quantiles, in milliseconds: p50, p99 and the maximum)
// and how many acknowledged appends status has not shown yet.
func (l *statusLag) report() (p50, p99, maxLag float64, missing int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.pending {
		missing += len(p)
	}
	r := loadphase.Result{Latencies: slices.Clone(l.lags)}
	return r.QuantileMs(0.5), r.QuantileMs(0.99), r.QuantileMs(1), missing
}
