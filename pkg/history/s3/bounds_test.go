package s3_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/s3"
)

// The endpoint is chosen by a Conversation's author: one that answers every GET with far more
// bytes than any object this backend writes gets ErrCorrupt, whether it declares the length
// (refused before the body is read) or streams it chunked (the read stops at the limit).
func TestGetStopsAtTheObjectLimit(t *testing.T) {
	const served = 256 << 20        // the hostile answer
	const allowed = 64<<20 + 16<<20 // the object limit, plus what sockets may buffer
	for name, declare := range map[string]bool{"declared length": true, "chunked": false} {
		t.Run(name, func(t *testing.T) {
			var sent atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet {
					w.WriteHeader(http.StatusNotImplemented)
					return
				}
				w.Header().Set("ETag", `"hostile"`)
				w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
				if declare {
					w.Header().Set("Content-Length", strconv.Itoa(served))
				}
				chunk := make([]byte, 64<<10)
				for sent.Load() < served {
					n, err := w.Write(chunk)
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			st, err := s3.New(s3.Config{
				Endpoint: srv.URL, Bucket: "hostile", Region: "us-east-1", Addressing: s3.AddressingPath,
				AccessKeyID: "id", SecretAccessKey: "secret", MaxRetries: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = st.Close() }()
			_, err = st.Open(context.Background(), "conversation", history.OpenOptions{}) // reads the index
			if !errors.Is(err, history.ErrCorrupt) {
				t.Fatalf("open over an endpoint answering %d bytes: %v, want ErrCorrupt", served, err)
			}
			srv.CloseClientConnections()
			if n := sent.Load(); n > allowed {
				t.Fatalf("the store read %d MiB of a hostile answer", n>>20)
			}
		})
	}
}

// A prefix is where a Conversation's author puts its history: it may not climb out of the
// bucket on a store that maps keys to paths.
func TestPrefixStaysInTheBucket(t *testing.T) {
	for prefix, ok := range map[string]bool{
		"": true, "parley": true, "parley/": true, "team-a/histories.v1/": true,
		"../other": false, "a/../b": false, "a/./b": false, ".": false, "/abs": false, "a//b": false, `a\b`: false, "//": false,
	} {
		_, err := s3.New(s3.Config{Endpoint: "127.0.0.1:9", Bucket: "parley", Prefix: prefix})
		if (err == nil) != ok {
			t.Errorf("prefix %q: %v, want accepted %v", prefix, err, ok)
		}
	}
}

// Bodies being received count in the decode budget the stores of a process share: with the
// budget taken by other reads, a GET waits for its part and then gives up with ErrBusy, having
// read little of a large body, rather than holding another object's worth of memory.
func TestGetBodiesAreReceivedWithinTheDecodeBudget(t *testing.T) {
	const body = 48 << 20
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusNotImplemented)
			return
		}
		w.Header().Set("ETag", `"large"`)
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Length", strconv.Itoa(body))
		chunk := make([]byte, 64<<10)
		for sent.Load() < body {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	budget := history.NewDecodeBudget(64<<20, 50*time.Millisecond)
	st, err := s3.New(s3.Config{
		Endpoint: srv.URL, Bucket: "large", Region: "us-east-1", Addressing: s3.AddressingPath,
		AccessKeyID: "id", SecretAccessKey: "secret", MaxRetries: 1, DecodeBudget: budget,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	release, err := budget.Acquire(context.Background(), 32<<20) // held by other reads
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	_, err = st.Open(context.Background(), "conversation", history.OpenOptions{}) // reads the index
	if !errors.Is(err, history.ErrBusy) {
		t.Fatalf("open with half the budget taken and a %d MiB index: %v, want ErrBusy", body>>20, err)
	}
	srv.CloseClientConnections()
	if n := sent.Load(); n > body/2 {
		t.Fatalf("the store received %d MiB of the body before giving up", n>>20)
	}
}
