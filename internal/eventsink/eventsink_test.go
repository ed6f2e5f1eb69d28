package eventsink

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
)

// blockingSink counts the calls inside it and holds each until release is closed.
type blockingSink struct {
	inside, most atomic.Int32
	entered      chan struct{}
	release      chan struct{}
}

func (s *blockingSink) call() (*eventsv1.Event, error) {
	n := s.inside.Add(1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	s.entered <- struct{}{}
	<-s.release
	s.inside.Add(-1)
	return &eventsv1.Event{}, nil
}

func (s *blockingSink) Create(context.Context, *eventsv1.Event) (*eventsv1.Event, error) {
	return s.call()
}

func (s *blockingSink) Update(context.Context, *eventsv1.Event) (*eventsv1.Event, error) {
	return s.call()
}

func (s *blockingSink) Patch(context.Context, *eventsv1.Event, []byte) (*eventsv1.Event, error) {
	return s.call()
}

func TestBoundedSinkKeepsAtMostInFlightCallsOpen(t *testing.T) {
	inner := &blockingSink{entered: make(chan struct{}, 64), release: make(chan struct{})}
	sink := newBoundedSink(inner, 2)
	sink.waiting = prometheus.NewGauge(prometheus.GaugeOpts{Name: "waiting"})
	ctx := context.Background()
	var wg sync.WaitGroup
	calls := []func() error{
		func() error { _, err := sink.Create(ctx, &eventsv1.Event{}); return err },
		func() error { _, err := sink.Update(ctx, &eventsv1.Event{}); return err },
		func() error { _, err := sink.Patch(ctx, &eventsv1.Event{}, nil); return err },
	}
	const n = 12
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() { errs <- calls[i%len(calls)]() })
	}
	// Two calls get in; the other ten wait for a slot.
	for range 2 {
		<-inner.entered
	}
	select {
	case <-inner.entered:
		t.Fatal("a third call reached the sink while two were in flight")
	case <-time.After(100 * time.Millisecond):
	}
	for deadline := time.Now().Add(5 * time.Second); testutil.ToFloat64(sink.waiting) != n-2; {
		if time.Now().After(deadline) {
			t.Fatalf("%v calls counted as waiting, want %d", testutil.ToFloat64(sink.waiting), n-2)
		}
		time.Sleep(time.Millisecond)
	}
	close(inner.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(sink.waiting); got != 0 {
		t.Fatalf("%v calls still counted as waiting after all returned", got)
	}
	if got := inner.most.Load(); got != 2 {
		t.Fatalf("at most %d calls were in the sink at once, want 2", got)
	}
}

func TestBoundedSinkGivesUpWaitingWhenTheContextEnds(t *testing.T) {
	inner := &blockingSink{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(inner.release)
	sink := newBoundedSink(inner, 1)
	go func() { _, _ = sink.Create(context.Background(), &eventsv1.Event{}) }()
	<-inner.entered
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := sink.Create(ctx, &eventsv1.Event{}); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiting call whose context ended returned %v, want context.Canceled", err)
	}
}
