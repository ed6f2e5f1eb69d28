// Package eventsink sends the controllers' Kubernetes Events (events.k8s.io/v1).
//
// It differs from controller-runtime's recorder in two ways, both about the API server's CPU
// when many sessions change at once (the scale benchmark's expiry phase, docs/benchmarks.md):
//
//   - Events go as protobuf, as the core controllers send them: an Event is a built-in type,
//     and protobuf is the API server's cheaper encoding to decode. (The benchmark measured both
//     changes together, so it does not tell what protobuf saves alone.)
//   - A bounded number of Events is in flight. client-go's broadcaster sends each Event from a
//     goroutine of its own, so a burst of transitions (167 sessions whose ttl ends in the same
//     second) becomes as many concurrent creates, competing with the status writes that carry
//     the same facts. Bounded, the Events trail the burst instead of stretching it: the status
//     is the record, an Event its announcement.
package eventsink

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"

	"github.com/parley-dev/parley/internal/metrics"
)

// The events.k8s.io broadcaster creates an Event, and patches it when it repeats (a series).
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// DefaultInFlight is how many Events are sent at once: the value that lowered the scale
// benchmark's expiry lateness against client-go's one goroutine per Event, where a larger bound
// did not and a smaller one sent too few (docs/benchmarks.md). The price is that in a burst of
// new sessions the Events trail their status by seconds.
const DefaultInFlight = 4

// Start builds a broadcaster on the manager's HTTP client (one connection for everything) and
// starts sending until ctx ends; Events recorded after that are dropped. Its NewRecorder gives
// the controllers' recorders.
func Start(ctx context.Context, cfg *rest.Config, httpClient *http.Client, inFlight int) (events.EventBroadcaster, error) {
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := eventsv1client.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the Events client: %w", err)
	}
	sink := newBoundedSink(&events.EventSinkImpl{Interface: client}, inFlight)
	sink.waiting = metrics.EventsWaiting
	b := events.NewBroadcaster(sink)
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("starting to send Events: %w", err)
	}
	go func() {
		<-ctx.Done()
		b.Shutdown()
	}()
	return b, nil
}

// boundedSink lets at most cap(slots) calls reach the API server at once; the others wait
// for a slot or their context.
type boundedSink struct {
	sink    events.EventSink
	slots   chan struct{}
	waiting prometheus.Gauge // calls waiting for a slot; nil: not counted
}

func newBoundedSink(sink events.EventSink, inFlight int) *boundedSink {
	return &boundedSink{sink: sink, slots: make(chan struct{}, max(inFlight, 1))}
}

func (s *boundedSink) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	default:
	}
	if s.waiting != nil {
		s.waiting.Inc()
		defer s.waiting.Dec()
	}
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *boundedSink) release() { <-s.slots }

func (s *boundedSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	return s.sink.Create(ctx, e)
}

func (s *boundedSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	return s.sink.Update(ctx, e)
}

func (s *boundedSink) Patch(ctx context.Context, old *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	return s.sink.Patch(ctx, old, data)
}
