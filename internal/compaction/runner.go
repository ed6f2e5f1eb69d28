// Package compaction runs compactions of live conversations off the reconcile path. The
// Conversation reconciler decides that one is due (a pure decision), takes the Compaction
// Checkpoint of the epoch, and hands the rest to the Runner: load the state from the cached
// view, run the configured strategy, and write the result as a new epoch. A slow summarizer
// holds a runner worker, never a reconcile, and one namespace holds at most one worker. When a job ends, the Runner wakes the
// Conversation's reconcile, which records the result in status (the view of the new epoch
// says what the compaction did, so a manager killed before that status write loses nothing).
package compaction

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
)

// Defaults of the Runner's knobs.
const (
	DefaultConcurrency    = 2
	DefaultInitialBackoff = 5 * time.Second
	DefaultMaxBackoff     = 5 * time.Minute
	// DefaultSummarizerTimeout bounds one summarizer call (a long history, a large model).
	DefaultSummarizerTimeout = 2 * time.Minute
)

// Request asks for the compaction of one epoch of a Conversation's history.
type Request struct {
	Conversation types.NamespacedName
	// Epoch is the epoch to compact and Sequence its head when the compaction was asked for.
	// A request for an epoch the history has left is already done.
	Epoch    uint64
	Sequence uint64
	// Checkpoint is the Ready Compaction Checkpoint of the epoch and CheckpointSequence the
	// last message it holds: no message after it is folded, so the Checkpoint holds every
	// message the compaction removes or edits.
	Checkpoint         string
	CheckpointSequence int64
	// Force compacts even below the threshold (parley.dev/compact-requested-at).
	Force bool
}

// Result is how a job ended.
type Result string

// Results.
const (
	// ResultCompacted: a new epoch was written.
	ResultCompacted Result = "compacted"
	// ResultNothingToCompact: the strategy found nothing to fold, or the context is no longer
	// over the threshold. Not retried for the same epoch, sequence and Checkpoint.
	ResultNothingToCompact Result = "nothing"
	// ResultStaleCheckpoint: more messages arrived after the Checkpoint than keepRecentMessages
	// keeps, so folding would remove messages the Checkpoint does not hold: take a new one.
	ResultStaleCheckpoint Result = "stale-checkpoint"
	// ResultSuperseded: the epoch was compacted already or the Conversation is gone.
	ResultSuperseded Result = "superseded"
	// ResultFailed: the attempt failed; it is retried with exponential backoff.
	ResultFailed Result = "failed"
)

// Outcome is what the last job of a Conversation did.
type Outcome struct {
	Request Request
	Result  Result
	// Strategy is the Conversation's strategy when the job ran.
	Strategy string
	// Reason (a condition reason) and Message describe a failure; never credentials or
	// message content.
	Reason  string
	Message string
	// Failures counts consecutive failed attempts.
	Failures int
	// Record describes the compaction written (ResultCompacted).
	Record *journal.Compaction
}

// Runner runs compactions with bounded concurrency, leader-only, at most one per namespace at
// a time (fairQueue). Add it to the manager and give its Source to the Conversation
// controller.
type Runner struct {
	// Client reads Conversations (the manager's cache); Secrets reads summarizer Secrets
	// (the API reader: no cluster-wide Secret cache).
	Client  client.Reader
	Secrets client.Reader
	// Sessions opens the conversations' histories and their shared views.
	Sessions *session.Sessions
	Clock    clock.PassiveClock
	// Concurrency bounds the jobs running at once (DefaultConcurrency when zero).
	Concurrency int
	// InitialBackoff and MaxBackoff bound the retry delays of a failing compaction.
	InitialBackoff, MaxBackoff time.Duration
	// SummarizerTimeout bounds one summarizer attempt.
	SummarizerTimeout time.Duration

	once sync.Once
	mu   sync.Mutex
	jobs map[types.NamespacedName]*job
	// queue holds each conversation's compaction once and delays retries; what it hands out
	// is ready, and waits in fair for a worker its namespace may have.
	queue   workqueue.TypedRateLimitingInterface[types.NamespacedName]
	fair    fairQueue
	ready   *sync.Cond // signalled under mu when fair may have work for a worker
	stopped bool
	wake    chan event.TypedGenericEvent[client.Object]
}

type job struct {
	req     Request
	waiting bool // a retry is scheduled: requests update req but do not run it sooner
	outcome *Outcome
}

func (r *Runner) init() {
	r.once.Do(func() {
		initial, ceiling := r.InitialBackoff, r.MaxBackoff
		if initial <= 0 {
			initial = DefaultInitialBackoff
		}
		if ceiling <= 0 {
			ceiling = DefaultMaxBackoff
		}
		r.jobs = map[types.NamespacedName]*job{}
		r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](initial, ceiling),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "compaction"})
		r.wake = make(chan event.TypedGenericEvent[client.Object], 1024)
		r.ready = sync.NewCond(&r.mu)
	})
}

// Source wakes the Conversation controller when a job ends.
func (r *Runner) Source() source.Source {
	r.init()
	return source.Channel(r.wake, &handler.EnqueueRequestForObject{})
}

// NeedLeaderElection: only the leader compacts (the reconciler that asks runs there too).
func (r *Runner) NeedLeaderElection() bool { return true }

// Request asks for a compaction. It returns at once; a request already queued, running or
// waiting for its retry is updated instead of run twice, and one that found nothing to do
// for the same epoch, sequence and Checkpoint is not repeated.
func (r *Runner) Request(req Request) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	j := r.jobs[req.Conversation]
	if j == nil {
		j = &job{}
		r.jobs[req.Conversation] = j
	}
	if o := j.outcome; o != nil && o.Request.Epoch == req.Epoch {
		switch o.Result {
		case ResultCompacted, ResultSuperseded:
			return // the caller's view lags behind the new epoch
		case ResultNothingToCompact, ResultStaleCheckpoint:
			if o.Request.Sequence == req.Sequence && o.Request.Checkpoint == req.Checkpoint &&
				o.Request.CheckpointSequence == req.CheckpointSequence && o.Request.Force == req.Force {
				return
			}
		}
	}
	j.req = req
	if !j.waiting {
		r.queue.Add(req.Conversation)
	}
}

// Outcome returns what the last job of a Conversation did.
func (r *Runner) Outcome(key types.NamespacedName) (Outcome, bool) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	if j := r.jobs[key]; j != nil && j.outcome != nil {
		return *j.outcome, true
	}
	return Outcome{}, false
}

// Forget drops what the Runner knows of a Conversation (deleted).
func (r *Runner) Forget(key types.NamespacedName) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.jobs, key)
}

// Start runs the workers until ctx ends.
func (r *Runner) Start(ctx context.Context) error {
	r.init()
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	n := r.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	var wg sync.WaitGroup
	wg.Go(r.dispatch)
	for range n {
		wg.Go(func() {
			for r.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	r.queue.ShutDown()
	r.mu.Lock()
	r.stopped = true
	r.ready.Broadcast()
	r.mu.Unlock()
	wg.Wait()
	return nil
}

// dispatch moves each conversation the workqueue hands out (ready, once) to the fair queue.
func (r *Runner) dispatch() {
	for {
		key, shutdown := r.queue.Get()
		if shutdown {
			return
		}
		r.mu.Lock()
		r.fair.push(key)
		r.ready.Signal()
		r.mu.Unlock()
	}
}

// take waits for the next compaction the fair queue lets a worker run; false once the Runner
// stops.
func (r *Runner) take() (types.NamespacedName, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if key, ok := r.fair.pop(); ok {
			return key, true
		}
		if r.stopped {
			return types.NamespacedName{}, false
		}
		r.ready.Wait()
	}
}

// release ends a compaction: its namespace may run another, and the workqueue may hand the
// conversation out again.
func (r *Runner) release(key types.NamespacedName) {
	r.mu.Lock()
	r.fair.finish(key.Namespace)
	r.ready.Broadcast()
	r.mu.Unlock()
	r.queue.Done(key)
}

func (r *Runner) next(ctx context.Context) bool {
	key, ok := r.take()
	if !ok {
		return false
	}
	defer r.release(key)
	r.mu.Lock()
	j := r.jobs[key]
	if j == nil { // forgotten while queued
		r.mu.Unlock()
		r.queue.Forget(key)
		return true
	}
	j.waiting = false
	req := j.req
	failures := 0
	if j.outcome != nil && j.outcome.Result == ResultFailed {
		failures = j.outcome.Failures
	}
	r.mu.Unlock()

	start := r.Clock.Now()
	out := r.run(ctx, req)
	observe(&out, r.Clock.Since(start))
	log := logf.FromContext(ctx).WithValues("conversation", key, "epoch", req.Epoch)
	r.mu.Lock()
	if out.Result == ResultFailed {
		out.Failures = failures + 1
		j.waiting = true
		r.queue.AddRateLimited(key)
		log.Info("compaction failed; retrying with backoff", "reason", out.Reason, "failures", out.Failures, "error", out.Message)
	} else {
		r.queue.Forget(key)
		if out.Result == ResultCompacted {
			log.Info("compacted", "strategy", out.Record.Strategy, "tokensBefore", out.Record.TokensBefore,
				"tokensAfter", out.Record.TokensAfter, "messagesFolded", out.Record.MessagesFolded)
		}
	}
	j.outcome = &out
	r.mu.Unlock()

	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case r.wake <- event.TypedGenericEvent[client.Object]{Object: obj}:
	case <-ctx.Done():
	}
	return true
}

// failed builds the outcome of a failed attempt.
func failed(req Request, reason string, err error) Outcome {
	return Outcome{Request: req, Result: ResultFailed, Reason: reason, Message: err.Error()}
}
