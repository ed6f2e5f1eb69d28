package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
)

// stream is an SSE endpoint scripted per connection: connect n (0 first) writes what
// answer(n, lastEventID) returns, then ends the stream.
type stream struct {
	mu      sync.Mutex
	lastIDs []string
	accepts []string
	answer  func(n int, lastEventID string) (status int, body string)
}

func (s *stream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := len(s.lastIDs)
	s.lastIDs = append(s.lastIDs, r.Header.Get("Last-Event-ID"))
	s.accepts = append(s.accepts, r.Header.Get("Accept"))
	s.mu.Unlock()
	status, body := s.answer(n, r.Header.Get("Last-Event-ID"))
	w.WriteHeader(status)
	_, _ = fmt.Fprint(w, body)
}

func (s *stream) seen() ([]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lastIDs...), append([]string(nil), s.accepts...)
}

func followClient(t *testing.T, s *stream) *Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := New(Options{URL: srv.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	c.sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	return c
}

func messageEvent(seq int, id string) string {
	b, _ := json.Marshal(text(id, "user", id))
	return fmt.Sprintf("event: message\nid: %d\ndata: %s\n\n", seq, b)
}

const epochEvent = "event: epoch\ndata: {\"epoch\":2}\n\n"

func TestFollowResumesADroppedStreamFromTheLastMessageAndStopsAtANewEpoch(t *testing.T) {
	s := &stream{answer: func(n int, _ string) (int, string) {
		switch n {
		case 0:
			return http.StatusOK, messageEvent(5, "m5") + ": keep-alive\n\n" + messageEvent(6, "m6") // then the stream drops
		case 1:
			return http.StatusServiceUnavailable, problemBody(503, wire.ProblemUnavailable, "restarting")
		default:
			return http.StatusOK, messageEvent(7, "m7") + epochEvent
		}
	}}
	var got []string
	err := followClient(t, s).Follow(context.Background(), "ns", "c", 4, func(m conversation.Message) error {
		got = append(got, m.ID)
		return nil
	})
	if !errors.Is(err, ErrEpochChanged) {
		t.Fatalf("Follow ended with %v, want ErrEpochChanged", err)
	}
	if !cmp.Equal(got, []string{"m5", "m6", "m7"}) {
		t.Errorf("messages %v", got)
	}
	lastIDs, accepts := s.seen()
	if want := []string{"4", "6", "6"}; !cmp.Equal(lastIDs, want) {
		t.Errorf("Last-Event-ID per connection %v, want %v", lastIDs, want)
	}
	for _, a := range accepts {
		if a != "text/event-stream" {
			t.Errorf("Accept %q", a)
		}
	}
}

func TestFollowReturnsTheCallbacksErrorWithoutReconnecting(t *testing.T) {
	s := &stream{answer: func(int, string) (int, string) {
		return http.StatusOK, messageEvent(1, "m1") + messageEvent(2, "m2")
	}}
	stop := errors.New("enough")
	err := followClient(t, s).Follow(context.Background(), "ns", "c", 0, func(conversation.Message) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("Follow ended with %v, want the callback's error", err)
	}
	if ids, _ := s.seen(); len(ids) != 1 {
		t.Errorf("%d connections, want 1", len(ids))
	}
}

func TestFollowDoesNotRetryARefusal(t *testing.T) {
	s := &stream{answer: func(int, string) (int, string) {
		return http.StatusForbidden, problemBody(403, wire.ProblemForbidden, "not the agent pod of conversation ns/c")
	}}
	err := followClient(t, s).Follow(context.Background(), "ns", "c", 0, func(conversation.Message) error { return nil })
	var p *wire.Problem
	if !errors.As(err, &p) || p.Status != 403 || p.Type != wire.ProblemForbidden {
		t.Fatalf("Follow ended with %v, want the 403 problem", err)
	}
	if ids, _ := s.seen(); len(ids) != 1 {
		t.Errorf("%d connections, want 1", len(ids))
	}
}

func TestFollowEndsWithItsContext(t *testing.T) {
	s := &stream{answer: func(int, string) (int, string) { return http.StatusOK, "" }}
	ctx, cancel := context.WithCancel(context.Background())
	c := followClient(t, s)
	waits := 0
	c.sleep = func(ctx context.Context, _ time.Duration) error {
		if waits++; waits == 3 {
			cancel()
		}
		return ctx.Err()
	}
	err := c.Follow(ctx, "ns", "c", 0, func(conversation.Message) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow ended with %v, want context.Canceled", err)
	}
}
