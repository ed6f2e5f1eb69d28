package s3_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/s3"
)

// An endpoint that sends its headers and then the body slowly, or never, must not hold the
// caller (a reconcile worker: the controller reads without a deadline) or its part of the
// decode budget for ever: every request, its body included, ends within the transfer timeout
// with ErrUnavailable. The endpoint is chosen by a Conversation's author.
func TestStalledBodyEndsWithinTheTransferTimeout(t *testing.T) {
	for name, declared := range map[string]int{"index": 1 << 20, "listing": 0} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodDelete {
					w.WriteHeader(http.StatusNoContent)
					return
				}
				w.Header().Set("ETag", `"stalled"`)
				w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
				if r.URL.Query().Has("list-type") {
					w.Header().Set("Content-Type", "application/xml")
					_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>stalled</Name>`))
				} else {
					w.Header().Set("Content-Length", strconv.Itoa(declared))
					_, _ = w.Write([]byte(`{"v":1,`))
				}
				w.(http.Flusher).Flush()
				<-r.Context().Done() // the rest never comes
			}))
			defer srv.Close()
			defer srv.CloseClientConnections()
			st := endpointStore(t, srv.URL, "stalled", time.Second)
			done := make(chan error, 1)
			go func() {
				if declared == 0 {
					done <- st.Delete(context.Background(), "conversation") // lists the history's objects
					return
				}
				_, err := st.Open(context.Background(), "conversation", history.OpenOptions{}) // reads the index
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, history.ErrUnavailable) {
					t.Fatalf("a stalled answer: %v, want ErrUnavailable", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("a stalled answer still held the caller 15 s after a transfer timeout of 1 s")
			}
		})
	}
}

// Response headers are outside the decode budget: an endpoint answering with headers far
// longer than any S3 service sends (megabytes of them, to every request) is refused past
// maxResponseHeaderBytes rather than held whole, once per request in flight.
func TestLongResponseHeadersAreRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for i := range 64 {
			w.Header().Set(fmt.Sprintf("X-Amz-Meta-Pad-%d", i), strings.Repeat("p", 16<<10))
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code></Error>`))
	}))
	defer srv.Close()
	st := endpointStore(t, srv.URL, "padded", 0)
	_, err := st.Open(context.Background(), "conversation", history.OpenOptions{}) // reads the index
	if err == nil || errors.Is(err, history.ErrNotFound) {
		t.Fatalf("an answer with 1 MiB of headers: %v, want it refused", err)
	}
}

// The endpoint a Conversation names is the only host its requests go to: a redirect to another
// host (with the signed request and, for a write, the history) is not followed.
func TestRedirectIsNotFollowed(t *testing.T) {
	var redirected, elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	st := endpointStore(t, srv.URL, "redirected", 0)
	if _, err := st.Open(context.Background(), "conversation", history.OpenOptions{Create: true}); err == nil {
		t.Error("a history created through an endpoint that only redirects")
	}
	if n := elsewhere.Load(); n > 0 || redirected.Load() == 0 {
		t.Fatalf("%d redirects answered, %d requests followed them to the other host", redirected.Load(), n)
	}
}

// endpointStore is a store over the test's endpoint, closed at the test's end.
func endpointStore(t *testing.T, endpoint, bucket string, transferTimeout time.Duration) history.Store {
	t.Helper()
	st, err := s3.New(s3.Config{
		Endpoint: endpoint, Bucket: bucket, Region: "us-east-1", Addressing: s3.AddressingPath,
		AccessKeyID: "id", SecretAccessKey: "secret", MaxRetries: 1, TransferTimeout: transferTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
