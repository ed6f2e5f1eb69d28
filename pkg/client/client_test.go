package client

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
)

// seen is one request as the scripted server received it.
type seen struct {
	Method, Path, Query, Body string
	Header                    http.Header
}

// script is a Session API stand-in: answer decides each answer (status, headers, body) from
// the request's number (0 first) and the request; every request is recorded.
type script struct {
	mu     sync.Mutex
	seen   []seen
	answer func(n int, r *http.Request) (int, http.Header, string)
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.seen)
	s.seen = append(s.seen, seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: string(body), Header: r.Header.Clone()})
	s.mu.Unlock()
	status, header, out := s.answer(n, r)
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, out)
}

func (s *script) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.seen...)
}

// serve starts the script and a client of it whose waits are recorded instead of slept.
func serve(t *testing.T, opts Options, answer func(n int, r *http.Request) (int, http.Header, string)) (*Client, *script, *[]time.Duration) {
	t.Helper()
	s := &script{answer: answer}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	opts.URL = srv.URL + opts.URL
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, s, &waits
}

func ok(body string) func(int, *http.Request) (int, http.Header, string) {
	return func(int, *http.Request) (int, http.Header, string) { return http.StatusOK, nil, body }
}

func problemBody(status int, typ, detail string) string {
	b, _ := json.Marshal(wire.Problem{Type: typ, Title: http.StatusText(status), Status: status, Detail: detail})
	return string(b)
}

func text(id, role, s string) conversation.Message {
	return conversation.Message{ID: id, Role: conversation.Role(role), Blocks: []conversation.Block{{Type: conversation.BlockText, Text: s}}}
}

func TestEachCallSendsItsRequest(t *testing.T) {
	ctx := context.Background()
	const conv = "/v1/namespaces/ns/conversations/c"
	turn := int64(3)
	cases := map[string]struct {
		call                      func(c *Client) error
		method, path, query, body string
	}{
		"conversation": {
			call:   func(c *Client) error { _, err := c.Conversation(ctx, "ns", "c"); return err },
			method: http.MethodGet, path: conv,
		},
		"messages, first page of the server's size": {
			call:   func(c *Client) error { _, err := c.Messages(ctx, "ns", "c", 0, 0); return err },
			method: http.MethodGet, path: conv + "/messages",
		},
		"messages after a sequence, at most a limit": {
			call:   func(c *Client) error { _, err := c.Messages(ctx, "ns", "c", 41, 7); return err },
			method: http.MethodGet, path: conv + "/messages", query: "after=41&limit=7",
		},
		"append": {
			call: func(c *Client) error {
				_, err := c.Append(ctx, "ns", "c", []conversation.Message{text("u1", "user", "hi")})
				return err
			},
			method: http.MethodPost, path: conv + "/messages",
			body: `{"messages":[{"id":"u1","role":"user","blocks":[{"type":"text","text":"hi"}]}]}`,
		},
		"events": {
			call: func(c *Client) error {
				_, err := c.AppendEvents(ctx, "ns", "c", []wire.Event{{ID: "e1", Event: conversation.Event{Type: conversation.EventSessionIdle}}})
				return err
			},
			method: http.MethodPost, path: conv + "/events", body: `{"events":[{"id":"e1","event":{"type":"session:idle"}}]}`,
		},
		"adapter state": {
			call: func(c *Client) error {
				return c.PutAdapterState(ctx, "ns", "c", wire.AdapterStateRequest{Type: "claude-agent-sdk", State: map[string]any{"sessionId": "s"}})
			},
			method: http.MethodPut, path: conv + "/adapter-state", body: `{"type":"claude-agent-sdk","state":{"sessionId":"s"}}`,
		},
		"checkpoint": {
			call: func(c *Client) error {
				_, err := c.Checkpoint(ctx, "ns", "c", wire.CheckpointRequest{Name: "k", Turn: &turn})
				return err
			},
			method: http.MethodPost, path: conv + "/checkpoints", body: `{"name":"k","turn":3}`,
		},
		"compact": {
			call:   func(c *Client) error { return c.Compact(ctx, "ns", "c") },
			method: http.MethodPost, path: conv + "/compact", body: `{}`,
		},
		"resume bundle at the latest complete turn": {
			call:   func(c *Client) error { _, err := c.Resume(ctx, "ns", "c", 0); return err },
			method: http.MethodGet, path: conv + "/resume",
		},
		"resume bundle at a turn": {
			call:   func(c *Client) error { _, err := c.Resume(ctx, "ns", "c", 2); return err },
			method: http.MethodGet, path: conv + "/resume", query: "turn=2",
		},
		"state": {
			call:   func(c *Client) error { _, err := c.State(ctx, "ns", "c"); return err },
			method: http.MethodGet, path: conv + "/state",
		},
		"reset with the caller's id": {
			call: func(c *Client) error {
				_, err := c.Reset(ctx, "ns", "c", wire.ResetRequest{ID: "r1", KeepSystem: true})
				return err
			},
			method: http.MethodPost, path: conv + "/reset", body: `{"id":"r1","keepSystem":true}`,
		},
		"import": {
			call: func(c *Client) error {
				_, err := c.Import(ctx, "ns", "c", wire.ImportRequest{ID: "i", Part: 2})
				return err
			},
			method: http.MethodPost, path: conv + "/import",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, s, _ := serve(t, Options{Token: "tok"}, ok(`{}`))
			if err := tc.call(c); err != nil {
				t.Fatal(err)
			}
			reqs := s.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tc.method || r.Path != tc.path || r.Query != tc.query {
				t.Errorf("sent %s %s?%s, want %s %s?%s", r.Method, r.Path, r.Query, tc.method, tc.path, tc.query)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer tok" {
				t.Errorf("Authorization %q", got)
			}
			if r.Body == "" {
				if r.Header.Get("Content-Type") != "" {
					t.Errorf("a request without a body says Content-Type %q", r.Header.Get("Content-Type"))
				}
				if tc.body != "" {
					t.Errorf("no body, want %s", tc.body)
				}
				return
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if tc.body != "" && !sameJSON(t, r.Body, tc.body) {
				t.Errorf("body %s, want %s", r.Body, tc.body)
			}
		})
	}
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return cmp.Equal(x, y)
}

func TestABaseURLWithAPathKeepsIt(t *testing.T) {
	c, s, _ := serve(t, Options{URL: "/api/v1/namespaces/parley-system/services/https:parley-session-api:8082/proxy/"}, ok(`{}`))
	if _, err := c.Messages(context.Background(), "ns", "c", 1, 0); err != nil {
		t.Fatal(err)
	}
	want := "/api/v1/namespaces/parley-system/services/https:parley-session-api:8082/proxy/v1/namespaces/ns/conversations/c/messages"
	if r := s.requests()[0]; r.Path != want || r.Query != "after=1" {
		t.Errorf("sent %s?%s, want %s?after=1", r.Path, r.Query, want)
	}
}

func TestTransientFailuresAreRetriedWithTheSameIDs(t *testing.T) {
	for name, status := range map[string]int{"429": 429, "502": 502, "503": 503, "504": 504} {
		t.Run(name, func(t *testing.T) {
			c, s, waits := serve(t, Options{}, func(n int, _ *http.Request) (int, http.Header, string) {
				if n < 2 {
					return status, nil, problemBody(status, wire.ProblemOverloaded, "busy")
				}
				return http.StatusOK, nil, `{"epoch":1,"sequences":[4,5]}`
			})
			out, err := c.Append(context.Background(), "ns", "c", []conversation.Message{text("u1", "user", "a"), text("a1", "assistant", "b")})
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(out.Sequences, []uint64{4, 5}) {
				t.Errorf("sequences %v", out.Sequences)
			}
			reqs := s.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			for _, r := range reqs[1:] {
				if r.Body != reqs[0].Body {
					t.Errorf("a retry sent %s, the first try %s", r.Body, reqs[0].Body)
				}
			}
			if want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}; !cmp.Equal(*waits, want) {
				t.Errorf("waited %v, want the doubling backoff %v", *waits, want)
			}
		})
	}
}

func TestAResetRetriedByTheClientRepeatsTheIDItMade(t *testing.T) {
	c, s, _ := serve(t, Options{}, func(n int, _ *http.Request) (int, http.Header, string) {
		if n == 0 {
			return http.StatusServiceUnavailable, nil, problemBody(503, wire.ProblemNotReady, "the Reset Checkpoint is not Ready yet")
		}
		return http.StatusOK, nil, `{"checkpoint":"c-reset","epoch":2,"cleared":3}`
	})
	res, err := c.Reset(context.Background(), "ns", "c", wire.ResetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Checkpoint != "c-reset" || res.Epoch != 2 || res.Cleared != 3 {
		t.Errorf("answer %+v", res)
	}
	reqs := s.requests()
	ids := make([]string, 0, len(reqs))
	for _, r := range reqs {
		var req wire.ResetRequest
		if err := json.Unmarshal([]byte(r.Body), &req); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, req.ID)
	}
	if len(ids) != 2 || ids[0] == "" || ids[0] != ids[1] {
		t.Errorf("reset ids %q: want one made-up id, repeated on the retry", ids)
	}
	// Another call is another reset: another id.
	if _, err := c.Reset(context.Background(), "ns", "c", wire.ResetRequest{}); err != nil {
		t.Fatal(err)
	}
	var third wire.ResetRequest
	_ = json.Unmarshal([]byte(s.requests()[2].Body), &third)
	if third.ID == ids[0] {
		t.Errorf("a second Reset call reused the id %q", third.ID)
	}
}

func TestRetryAfterIsHonouredUpToMaxBackoff(t *testing.T) {
	for name, tc := range map[string]struct {
		retryAfter string
		want       time.Duration
	}{
		"seconds":                   {"2", 2 * time.Second},
		"capped by MaxBackoff":      {"60", 5 * time.Second},
		"a date: the backoff":       {"Wed, 21 Oct 2015 07:28:00 GMT", 100 * time.Millisecond},
		"zero: the backoff":         {"0", 100 * time.Millisecond},
		"not a number: the backoff": {"soon", 100 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			c, _, waits := serve(t, Options{MaxBackoff: 5 * time.Second}, func(n int, _ *http.Request) (int, http.Header, string) {
				if n == 0 {
					return http.StatusTooManyRequests, http.Header{"Retry-After": {tc.retryAfter}}, problemBody(429, wire.ProblemOverloaded, "slow down")
				}
				return http.StatusOK, nil, `{}`
			})
			if _, err := c.Conversation(context.Background(), "ns", "c"); err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(*waits, []time.Duration{tc.want}) {
				t.Errorf("waited %v, want [%v]", *waits, tc.want)
			}
		})
	}
}

func TestRetriesStopAtTheLimitWithTheLastProblem(t *testing.T) {
	c, s, waits := serve(t, Options{Retries: 2, MaxBackoff: 150 * time.Millisecond}, func(int, *http.Request) (int, http.Header, string) {
		return http.StatusServiceUnavailable, nil, problemBody(503, wire.ProblemUnavailable, "the store does not answer")
	})
	_, err := c.Conversation(context.Background(), "ns", "c")
	var p *wire.Problem
	if !errors.As(err, &p) || p.Status != 503 || p.Type != wire.ProblemUnavailable {
		t.Fatalf("error %v, want the 503 problem", err)
	}
	if n := len(s.requests()); n != 3 {
		t.Errorf("%d requests, want 1 + 2 retries", n)
	}
	if want := []time.Duration{100 * time.Millisecond, 150 * time.Millisecond}; !cmp.Equal(*waits, want) {
		t.Errorf("waited %v, want %v (the backoff capped by MaxBackoff)", *waits, want)
	}
}

func TestNegativeRetriesSendOnce(t *testing.T) {
	c, s, _ := serve(t, Options{Retries: -1}, func(int, *http.Request) (int, http.Header, string) {
		return http.StatusServiceUnavailable, nil, problemBody(503, wire.ProblemUnavailable, "down")
	})
	if _, err := c.Conversation(context.Background(), "ns", "c"); err == nil {
		t.Fatal("no error")
	}
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestFinalAnswersAreProblemsAndNotRetried(t *testing.T) {
	for _, tc := range []struct {
		status int
		typ    string
	}{
		{400, wire.ProblemMalformed},
		{401, wire.ProblemUnauthorized},
		{403, wire.ProblemForbidden},
		{404, wire.ProblemNotFound},
		{409, wire.ProblemConflict},
		{413, wire.ProblemTooLarge},
		{422, wire.ProblemInvalid},
		{500, ""},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			c, s, _ := serve(t, Options{}, func(int, *http.Request) (int, http.Header, string) {
				return tc.status, http.Header{"Content-Type": {wire.ProblemContentType}}, problemBody(tc.status, tc.typ, "what went wrong")
			})
			_, err := c.Append(context.Background(), "ns", "c", []conversation.Message{text("u1", "user", "a")})
			var p *wire.Problem
			if !errors.As(err, &p) {
				t.Fatalf("error %v is not a *wire.Problem", err)
			}
			if p.Status != tc.status || p.Type != tc.typ || p.Detail != "what went wrong" {
				t.Errorf("problem %+v", p)
			}
			if !strings.Contains(err.Error(), "what went wrong") {
				t.Errorf("error %q does not say what went wrong", err)
			}
			if n := len(s.requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

func TestAnswersNotFromTheAPIKeepTheirMessage(t *testing.T) {
	for name, tc := range map[string]struct {
		body, detail string
	}{
		"a Kubernetes Status from the service proxy": {`{"kind":"Status","status":"Failure","message":"services \"parley-session-api\" not found","code":404}`, `services "parley-session-api" not found`},
		"plain text":                   {"no healthy upstream\n", "no healthy upstream"},
		"a long page is not a message": {"<html>" + strings.Repeat("x", 600) + "</html>", ""},
		"JSON of no known shape":       {`{"error":"x"}`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			c, _, _ := serve(t, Options{}, func(int, *http.Request) (int, http.Header, string) { return http.StatusNotFound, nil, tc.body })
			_, err := c.Conversation(context.Background(), "ns", "c")
			var p *wire.Problem
			if !errors.As(err, &p) || p.Status != http.StatusNotFound {
				t.Fatalf("error %v, want a 404 problem", err)
			}
			if p.Detail != tc.detail {
				t.Errorf("detail %q, want %q", p.Detail, tc.detail)
			}
		})
	}
}

func TestTheTokenFileIsReadOnEveryCall(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, s, _ := serve(t, Options{TokenFile: file, Token: "ignored"}, ok(`{}`))
	ctx := context.Background()
	if _, err := c.Conversation(ctx, "ns", "c"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("rotated"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Conversation(ctx, "ns", "c"); err != nil {
		t.Fatal(err)
	}
	reqs := s.requests()
	got := make([]string, 0, len(reqs))
	for _, r := range reqs {
		got = append(got, r.Header.Get("Authorization"))
	}
	if want := []string{"Bearer first", "Bearer rotated"}; !cmp.Equal(got, want) {
		t.Errorf("Authorization %q, want %q", got, want)
	}

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Conversation(ctx, "ns", "c"); err == nil || !strings.Contains(err.Error(), "reading the token") {
		t.Errorf("error %v, want one about the token", err)
	}
	if n := len(s.requests()); n != 2 {
		t.Errorf("%d requests: a call without its token was sent", n)
	}
}

func TestNoTokenNoAuthorization(t *testing.T) {
	c, s, _ := serve(t, Options{}, ok(`{}`))
	if _, err := c.Conversation(context.Background(), "ns", "c"); err != nil {
		t.Fatal(err)
	}
	if h := s.requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization %q without a token", h)
	}
}

func TestConnectionFailuresAreRetried(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	count := func() int { mu.Lock(); defer mu.Unlock(); return calls }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close() // the connection drops before an answer
			}
			return
		}
		_, _ = io.WriteString(w, `{"epoch":1,"sequences":[1]}`)
	}))
	defer srv.Close()
	c, err := New(Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c.sleep = func(context.Context, time.Duration) error { return nil }
	if _, err := c.Append(context.Background(), "ns", "c", []conversation.Message{text("u1", "user", "a")}); err != nil {
		t.Fatalf("a dropped connection was not retried: %v", err)
	}
	if n := count(); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
}

func TestAnUntrustedCertificateIsNotRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	defer srv.Close()
	c, err := New(Options{URL: srv.URL}) // the system pool does not hold httptest's CA
	if err != nil {
		t.Fatal(err)
	}
	retried := false
	c.sleep = func(context.Context, time.Duration) error { retried = true; return nil }
	if _, err := c.Conversation(context.Background(), "ns", "c"); err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	if retried || calls.Load() != 0 {
		t.Errorf("retried %v, %d calls reached the handler", retried, calls.Load())
	}
}

func TestTheCAOptionTrustsTheServer(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"name":"c","messages":2}`)
	}))
	defer srv.Close()
	ca := pemOf(srv.Certificate().Raw)
	c, err := New(Options{URL: srv.URL, CA: ca})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := c.Conversation(context.Background(), "ns", "c")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Name != "c" || sum.Messages != 2 {
		t.Errorf("summary %+v", sum)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = New(Options{URL: srv.URL, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Conversation(context.Background(), "ns", "c"); err != nil {
		t.Fatal(err)
	}
}

func TestACancelledContextEndsTheRetries(t *testing.T) {
	c, s, _ := serve(t, Options{}, func(int, *http.Request) (int, http.Header, string) {
		return http.StatusServiceUnavailable, nil, problemBody(503, wire.ProblemUnavailable, "down")
	})
	c.sleep = sleepContext
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Conversation(ctx, "ns", "c")
	var p *wire.Problem
	if !errors.As(err, &p) || p.Status != 503 {
		t.Errorf("error %v, want the last answer", err)
	}
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d requests after the context ended during the first wait", n)
	}
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	for name, opts := range map[string]Options{
		"no URL":            {},
		"not http(s)":       {URL: "ftp://example.com"},
		"no host":           {URL: "https://"},
		"a CA of no PEM":    {URL: "https://example.com", CA: []byte("not a certificate")},
		"a missing CA file": {URL: "https://example.com", CAFile: filepath.Join(t.TempDir(), "none")},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(opts); err == nil {
				t.Error("New accepted it")
			}
		})
	}
}

func TestFromEnvironmentReadsTheAgentPodsSettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("pod-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &script{answer: ok(`{}`)}
	srv := httptest.NewServer(s)
	defer srv.Close()
	t.Setenv(EnvAPIURL, srv.URL)
	t.Setenv(EnvTokenFile, file)
	t.Setenv(EnvCAFile, "")
	c, err := FromEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Conversation(context.Background(), "ns", "c"); err != nil {
		t.Fatal(err)
	}
	if h := s.requests()[0].Header.Get("Authorization"); h != "Bearer pod-token" {
		t.Errorf("Authorization %q", h)
	}
}

func TestADecodingFailureIsNotRetried(t *testing.T) {
	c, s, _ := serve(t, Options{}, ok(`{"messages": [`))
	if _, err := c.Messages(context.Background(), "ns", "c", 0, 0); err == nil || !strings.Contains(err.Error(), "decoding the answer") {
		t.Errorf("error %v", err)
	}
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d requests", n)
	}
}

func pemOf(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// A reader pages by handing each answer's next back as after, until next is 0.
func TestPagesChainByNext(t *testing.T) {
	c, s, _ := serve(t, Options{}, func(_ int, r *http.Request) (int, http.Header, string) {
		switch r.URL.Query().Get("after") {
		case "":
			return http.StatusOK, nil, `{"epoch":1,"messages":[{"id":"m1","role":"user","blocks":[]},{"id":"m2","role":"user","blocks":[]}],"next":2}`
		case "2":
			return http.StatusOK, nil, `{"epoch":1,"messages":[{"id":"m3","role":"user","blocks":[]}]}`
		}
		return http.StatusBadRequest, nil, problemBody(400, wire.ProblemMalformed, "unexpected after")
	})
	var ids []string
	for after := uint64(0); ; {
		page, err := c.Messages(context.Background(), "ns", "c", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			ids = append(ids, m.ID)
		}
		if page.Next == 0 {
			break
		}
		after = page.Next
	}
	if !cmp.Equal(ids, []string{"m1", "m2", "m3"}) {
		t.Errorf("ids %v", ids)
	}
	if q := s.requests()[1].Query; q != "after=2&limit=2" {
		t.Errorf("second page asked %q", q)
	}
}
