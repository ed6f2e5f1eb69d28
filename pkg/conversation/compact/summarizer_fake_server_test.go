package compact

import (
	"context"
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
	// hang keeps the request open until the client gives up (an attempt timeout).
	hang bool
	// drop closes the connection without an answer.
	drop bool
}

// fakeProvider is an httptest server answering with a script, recording every request.
type fakeProvider struct {
	t        *testing.T
	server   *httptest.Server
	mu       sync.Mutex
	script   []reply
	requests []recordedRequest
}

type recordedRequest struct {
	method, path string
	header       http.Header
	body         map[string]any
}

func newFakeProvider(t *testing.T, script ...reply) *fakeProvider {
	t.Helper()
	fp := &fakeProvider{t: t, script: script}
	fp.server = httptest.NewServer(http.HandlerFunc(fp.serve))
	t.Cleanup(fp.server.Close)
	return fp
}

func (fp *fakeProvider) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		fp.t.Errorf("reading request: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		fp.t.Errorf("request body is not JSON: %v", err)
	}
	fp.mu.Lock()
	fp.requests = append(fp.requests, recordedRequest{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
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
	}
	for k, v := range rep.headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = io.WriteString(w, rep.body)
}

func (fp *fakeProvider) calls() []recordedRequest {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return append([]recordedRequest(nil), fp.requests...)
}

// sleepRecorder replaces the wait between attempts, so tests see the waits without taking them.
type sleepRecorder struct{ waits []time.Duration }

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.waits = append(s.waits, d)
	return ctx.Err()
}

// testConfig is an HTTPConfig against the fake server with fast, bounded retries.
func testConfig(endpoint string) HTTPConfig {
	return HTTPConfig{
		Endpoint: endpoint, Model: "test-model", APIKey: "sk-test-key",
		AttemptTimeout: 2 * time.Second, MaxAttempts: 3,
		InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
	}
}
