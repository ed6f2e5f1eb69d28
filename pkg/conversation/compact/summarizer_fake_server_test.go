package compact

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// reply is one scripted answer of a fake provider.
type reply struct {
	status  int
	headers map[string]string
	body    string
	// delay holds the answer back (a slow model) unless the client gives up first.
	delay time.Duration
	// hang keeps the request open until the client gives up (an attempt timeout).
	hang bool
	// drop closes the connection without an answer.
	drop bool
}

// fakeProvider is a real HTTP server on 127.0.0.1 answering with a script, recording every
// request and when it arrived.
type fakeProvider struct {
	t        *testing.T
	server   *httptest.Server
	mu       sync.Mutex
	script   []reply
	requests []recordedRequest
}

type recordedRequest struct {
	method, path, query string
	header              http.Header
	body                map[string]any
	at                  time.Time
}

func newFakeProvider(t *testing.T, script ...reply) *fakeProvider {
	t.Helper()
	fp := &fakeProvider{t: t, script: script}
	fp.server = httptest.NewServer(http.HandlerFunc(fp.serve))
	t.Cleanup(fp.server.Close)
	return fp
}

func (fp *fakeProvider) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	// Read the whole request first: the server then notices a client that goes away.
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		fp.t.Errorf("reading request: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		fp.t.Errorf("request body is not JSON: %v", err)
	}
	fp.mu.Lock()
	fp.requests = append(fp.requests, recordedRequest{
		method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body, at: at,
	})
	n := len(fp.requests)
	fp.mu.Unlock()
	if n > len(fp.script) {
		fp.t.Errorf("unexpected request %d", n)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	rep := fp.script[n-1]
	switch {
	case rep.hang:
		<-r.Context().Done()
		return
	case rep.drop:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			fp.t.Errorf("hijack: %v", err)
			return
		}
		_ = conn.Close()
		return
	case rep.delay > 0:
		select {
		case <-time.After(rep.delay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range rep.headers {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(rep.status)
	_, _ = io.WriteString(w, rep.body)
}

func (fp *fakeProvider) calls() []recordedRequest {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return append([]recordedRequest(nil), fp.requests...)
}

// waits are the times between the arrivals of consecutive requests: the client's wait
// between attempts plus the short time an attempt takes on loopback.
func (fp *fakeProvider) waits() []time.Duration {
	calls := fp.calls()
	var out []time.Duration
	for i := 1; i < len(calls); i++ {
		out = append(out, calls[i].at.Sub(calls[i-1].at))
	}
	return out
}

// testConfig is an HTTPConfig against the fake server with bounded retries.
func testConfig(endpoint string) HTTPConfig {
	return HTTPConfig{
		Endpoint: endpoint, Model: "test-model", APIKey: testAPIKey,
		AttemptTimeout: 5 * time.Second, MaxAttempts: 3,
	}
}

const testAPIKey = "sk-test-key-0b5e1c"
