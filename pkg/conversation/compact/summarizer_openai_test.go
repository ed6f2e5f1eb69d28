package compact

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
)

const openAIOK = `{
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4.1-2025-04-14",
  "choices": [{
    "index": 0,
    "message": {"role": "assistant", "content": "  The user asked for the hosts file; the agent read it.\n", "refusal": null, "annotations": []},
    "logprobs": null,
    "finish_reason": "stop"
  }],
  "usage": {"prompt_tokens": 412, "completion_tokens": 14, "total_tokens": 426,
    "prompt_tokens_details": {"cached_tokens": 12, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
  "service_tier": "default"
}`

const openAIRateLimited = `{"error": {"message": "Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.", "type": "tokens", "param": null, "code": "rate_limit_exceeded"}}`

const openAIContextTooLong = `{"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}`

const secretText = "the launch code is 0000"

func foldedMessages() []conversation.Message {
	return newConv().user("show me /etc/hosts; "+secretText).call("toolu_1").result("127.0.0.1 localhost", "toolu_1").assistant("Here it is.").messages
}

func newTestSummarizer(t *testing.T, provider string, cfg HTTPConfig) Summarizer {
	t.Helper()
	s, err := NewSummarizer(provider, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenAISummarizerWireFormat(t *testing.T) {
	fp := newFakeProvider(t, reply{status: http.StatusOK, body: openAIOK})
	s := newTestSummarizer(t, ProviderOpenAI, testConfig(fp.server.URL))
	summary, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages(), MaxTokens: 300})
	if err != nil {
		t.Fatal(err)
	}
	if summary.Text != "The user asked for the hosts file; the agent read it." {
		t.Errorf("summary %q", summary.Text)
	}
	if want := (conversation.Usage{Input: 400, Output: 14, CacheRead: 12}); summary.Usage != want {
		t.Errorf("usage %+v, want %+v", summary.Usage, want)
	}
	calls := fp.calls()
	if len(calls) != 1 {
		t.Fatalf("%d requests", len(calls))
	}
	req := calls[0]
	if req.method != http.MethodPost || req.path != "/v1/chat/completions" {
		t.Errorf("%s %s", req.method, req.path)
	}
	if got := req.header.Get("Authorization"); got != "Bearer "+testAPIKey {
		t.Errorf("Authorization %q", got)
	}
	if got := req.header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q", got)
	}
	if req.body["model"] != "test-model" || req.body["max_completion_tokens"] != float64(300) {
		t.Errorf("body %v", req.body)
	}
	msgs, _ := req.body["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("messages %v", req.body["messages"])
	}
	system, _ := msgs[0].(map[string]any)
	user, _ := msgs[1].(map[string]any)
	if content, _ := system["content"].(string); system["role"] != "system" || !strings.Contains(content, "at most about 300 tokens") {
		t.Errorf("system message %v", system)
	}
	transcript, _ := user["content"].(string)
	if user["role"] != "user" || !strings.Contains(transcript, secretText) || !strings.Contains(transcript, "(tool call read id=toolu_1)") ||
		!strings.Contains(transcript, "(tool result id=toolu_1) 127.0.0.1 localhost") {
		t.Errorf("user message %v", user)
	}
}

// Waits are measured at the server: the time between two requests' arrivals. Lower bounds
// are what the client must wait; upper bounds only tell one wait from another, loosely.
func TestOpenAISummarizerRetries(t *testing.T) {
	cases := []struct {
		name      string
		script    []reply
		wantWaits func(t *testing.T, waits []time.Duration)
	}{
		{
			name: "429 with Retry-After in seconds",
			script: []reply{
				{status: http.StatusTooManyRequests, headers: map[string]string{"Retry-After": "1.2"}, body: openAIRateLimited},
				{status: http.StatusOK, body: openAIOK},
			},
			wantWaits: between(1200*time.Millisecond, time.Minute),
		},
		{
			name: "429 with retry-after-ms wins over Retry-After",
			script: []reply{
				{status: http.StatusTooManyRequests, headers: map[string]string{"retry-after-ms": "100", "Retry-After": "8"}, body: openAIRateLimited},
				{status: http.StatusOK, body: openAIOK},
			},
			wantWaits: between(100*time.Millisecond, 6*time.Second),
		},
		{
			name: "503 with Retry-After",
			script: []reply{
				{status: http.StatusServiceUnavailable, headers: map[string]string{"Retry-After": "1"}, body: `{"error":{"message":"overloaded","type":"server_error"}}`},
				{status: http.StatusOK, body: openAIOK},
			},
			wantWaits: between(time.Second, time.Minute),
		},
		{
			name: "5xx twice with the SDK's exponential backoff",
			script: []reply{
				{status: http.StatusInternalServerError, body: `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`},
				{status: http.StatusBadGateway, headers: map[string]string{"Content-Type": "text/html"}, body: `<html>bad gateway</html>`},
				{status: http.StatusOK, body: openAIOK},
			},
			// 0.5 s then 1 s, each less up to a quarter of jitter.
			wantWaits: between(375*time.Millisecond, time.Minute, 750*time.Millisecond, time.Minute),
		},
		{
			name:      "a dropped connection",
			script:    []reply{{drop: true}, {status: http.StatusOK, body: openAIOK}},
			wantWaits: between(375*time.Millisecond, time.Minute),
		},
		{
			name:      "a slow answer within the attempt timeout",
			script:    []reply{{status: http.StatusOK, body: openAIOK, delay: 500 * time.Millisecond}},
			wantWaits: between(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fp := newFakeProvider(t, tc.script...)
			s := newTestSummarizer(t, ProviderOpenAI, testConfig(fp.server.URL))
			summary, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()})
			if err != nil {
				t.Fatal(err)
			}
			if summary.Text == "" || len(fp.calls()) != len(tc.script) {
				t.Errorf("summary %q after %d calls", summary.Text, len(fp.calls()))
			}
			tc.wantWaits(t, fp.waits())
		})
	}
}

// between checks waits against (min, max) pairs, one pair per wait.
func between(bounds ...time.Duration) func(*testing.T, []time.Duration) {
	return func(t *testing.T, waits []time.Duration) {
		t.Helper()
		if len(waits) != len(bounds)/2 {
			t.Fatalf("waits %v, want %d", waits, len(bounds)/2)
		}
		for i, w := range waits {
			if w < bounds[2*i] || w > bounds[2*i+1] {
				t.Errorf("wait %d: %v, want in [%v, %v]", i+1, w, bounds[2*i], bounds[2*i+1])
			}
		}
	}
}

func TestOpenAISummarizerErrors(t *testing.T) {
	cases := []struct {
		name     string
		script   []reply
		calls    int
		contains []string
	}{
		{
			name:     "400 is not retried and says why",
			script:   []reply{{status: http.StatusBadRequest, body: openAIContextTooLong}},
			calls:    1,
			contains: []string{"summarizer openai", "/v1/chat/completions", "400 Bad Request", "invalid_request_error/context_length_exceeded", "maximum context length is 128000", "after 1 attempt)"},
		},
		{
			name: "retries run out",
			script: []reply{
				{status: http.StatusServiceUnavailable, body: `{"error":{"message":"overloaded","type":"server_error"}}`},
				{status: http.StatusServiceUnavailable, body: `{"error":{"message":"overloaded","type":"server_error"}}`},
				{status: http.StatusServiceUnavailable, body: `{"error":{"message":"overloaded","type":"server_error"}}`},
			},
			calls:    3,
			contains: []string{"503 Service Unavailable", "server_error: overloaded", "after 3 attempts"},
		},
		{
			name:     "x-should-retry false stops retries; Ollama's plain error",
			script:   []reply{{status: http.StatusInternalServerError, headers: map[string]string{"x-should-retry": "false"}, body: `{"error":"boom"}`}},
			calls:    1,
			contains: []string{"500 Internal Server Error: boom (after 1 attempt)"},
		},
		{
			name:     "vLLM's error at the top level",
			script:   []reply{{status: http.StatusNotFound, body: `{"object":"error","message":"The model does not exist.","type":"NotFoundError","param":null,"code":404}`}},
			calls:    1,
			contains: []string{"404 Not Found: NotFoundError: The model does not exist."},
		},
		{
			name: "x-should-retry true retries a 400",
			script: []reply{
				{status: http.StatusBadRequest, headers: map[string]string{"x-should-retry": "true"}, body: `{}`},
				{status: http.StatusBadRequest, body: `not json`},
			},
			calls:    2,
			contains: []string{"400 Bad Request (after 2 attempts)"},
		},
		{
			name:     "no choices",
			script:   []reply{{status: http.StatusOK, body: `{"id":"x","object":"chat.completion","choices":[]}`}},
			calls:    1,
			contains: []string{"200 OK", "no summary: no choices"},
		},
		{
			name:     "refusal",
			script:   []reply{{status: http.StatusOK, body: `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`}},
			calls:    1,
			contains: []string{"no summary: the model refused"},
		},
		{
			name:     "empty content",
			script:   []reply{{status: http.StatusOK, body: `{"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"length"}]}`}},
			calls:    1,
			contains: []string{"empty content (finish_reason length)"},
		},
		{
			name:     "content that is not a string",
			script:   []reply{{status: http.StatusOK, body: `{"choices":[{"index":0,"message":{"role":"assistant","content":5},"finish_reason":"stop"}]}`}},
			calls:    1,
			contains: []string{"empty content (finish_reason stop)"},
		},
		{
			name:     "malformed JSON",
			script:   []reply{{status: http.StatusOK, body: `{"choices": [` + secretText}},
			calls:    1,
			contains: []string{"200 OK: undecodable response body: invalid JSON at offset"},
		},
		{
			name:     "truncated JSON",
			script:   []reply{{status: http.StatusOK, body: `{"choices": [{"message": {"content": "` + secretText}},
			calls:    1,
			contains: []string{"200 OK: undecodable response body: truncated JSON"},
		},
		{
			name:     "not an object",
			script:   []reply{{status: http.StatusOK, body: `["` + secretText + `"]`}},
			calls:    1,
			contains: []string{"undecodable response body: a JSON array, want an object"},
		},
		{
			name:     "choices of the wrong type",
			script:   []reply{{status: http.StatusOK, body: `{"choices": {"a": 1}}`}},
			calls:    1,
			contains: []string{"200 OK", "no summary: no choices"},
		},
		{
			name:     "not JSON at all",
			script:   []reply{{status: http.StatusOK, headers: map[string]string{"Content-Type": "text/html"}, body: `<html>` + secretText + `</html>`}},
			calls:    1,
			contains: []string{"200 OK: undecodable response body"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fp := newFakeProvider(t, tc.script...)
			cfg := testConfig(fp.server.URL)
			s := newTestSummarizer(t, ProviderOpenAI, cfg)
			_, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()})
			if err == nil {
				t.Fatal("want an error")
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Provider != "openai" {
				t.Errorf("error %T %v is not an openai APIError", err, err)
			}
			for _, want := range tc.contains {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			assertNoLeak(t, err)
			if got := len(fp.calls()); got != tc.calls {
				t.Errorf("%d calls, want %d", got, tc.calls)
			}
		})
	}
}

// assertNoLeak fails when an error quotes the conversation or the key.
func assertNoLeak(t *testing.T, err error) {
	t.Helper()
	for _, secret := range []string{secretText, testAPIKey} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error quotes %q: %q", secret, err)
		}
	}
}

func TestSummarizerAttemptTimeoutIsRetried(t *testing.T) {
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			fp := newFakeProvider(t, reply{hang: true}, reply{hang: true})
			cfg := testConfig(fp.server.URL)
			cfg.AttemptTimeout, cfg.MaxAttempts = 100*time.Millisecond, 2
			s := newTestSummarizer(t, provider, cfg)
			err := summarizeWithin(t.Context(), t, s, 30*time.Second)
			if err == nil || !strings.HasSuffix(err.Error(), ": attempt timed out (after 2 attempts)") {
				t.Fatalf("err %v", err)
			}
			if len(fp.calls()) != 2 {
				t.Errorf("%d calls", len(fp.calls()))
			}
		})
	}
}

// A slow answer is bounded by the attempt timeout, then by the caller's context.
func TestSummarizerSlowAnswerIsBounded(t *testing.T) {
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			fp := newFakeProvider(t, reply{status: http.StatusOK, body: openAIOK, delay: time.Minute})
			s := newTestSummarizer(t, provider, testConfig(fp.server.URL))
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			err := summarizeWithin(ctx, t, s, 30*time.Second)
			if err == nil || !strings.HasSuffix(err.Error(), ": canceled: context deadline exceeded (after 1 attempt)") {
				t.Fatalf("err %v", err)
			}
		})
	}
}

func TestSummarizerStopsWhenTheCallerGivesUp(t *testing.T) {
	fp := newFakeProvider(t, reply{hang: true})
	s := newTestSummarizer(t, ProviderOpenAI, testConfig(fp.server.URL))
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := s.Summarize(ctx, SummaryRequest{Messages: foldedMessages()})
	if err == nil || !strings.Contains(err.Error(), "canceled: context deadline exceeded") {
		t.Fatalf("err %v", err)
	}
	if len(fp.calls()) != 1 {
		t.Errorf("%d calls after the caller gave up", len(fp.calls()))
	}
}

// A Retry-After that ends after the caller's deadline, or beyond MaxRetryWait, ends the call
// with the server's error at once, for both SDKs.
func TestSummarizerDoesNotWaitPastTheDeadline(t *testing.T) {
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
		for name, tc := range map[string]struct {
			retryAfter string
			deadline   time.Duration
		}{
			"deadline":     {"60", 10 * time.Second}, // within MaxRetryWait (2 minutes)
			"MaxRetryWait": {"3600", 0},
		} {
			t.Run(provider+" "+name, func(t *testing.T) {
				fp := newFakeProvider(t, reply{status: http.StatusTooManyRequests, headers: map[string]string{"Retry-After": tc.retryAfter}, body: openAIRateLimited})
				s := newTestSummarizer(t, provider, testConfig(fp.server.URL))
				ctx := t.Context()
				if tc.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				err := summarizeWithin(ctx, t, s, 30*time.Second)
				if err == nil || !strings.Contains(err.Error(), "429 Too Many Requests") || !strings.Contains(err.Error(), "(after 1 attempt)") {
					t.Fatalf("err %v", err)
				}
			})
		}
	}
}

// summarizeWithin summarizes foldedMessages and fails the test if that takes longer than
// limit (the call goes on in the background until the test's context ends).
func summarizeWithin(ctx context.Context, t *testing.T, s Summarizer, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := s.Summarize(ctx, SummaryRequest{Messages: foldedMessages()})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("no answer after %v: the summarizer waits", limit)
		return nil
	}
}

func TestOpenAIWithoutKeySendsNoAuthorization(t *testing.T) {
	// Nothing from the environment: not the key, not a base URL, not headers.
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	fp := newFakeProvider(t, reply{status: http.StatusOK, body: openAIOK})
	cfg := testConfig(fp.server.URL + "/v1/")
	cfg.APIKey = ""
	s := newTestSummarizer(t, ProviderOpenAI, cfg)
	if _, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()}); err != nil {
		t.Fatal(err)
	}
	req := fp.calls()[0]
	if _, ok := req.header["Authorization"]; ok || req.path != "/v1/chat/completions" || req.header.Get("X-Leak") != "" {
		t.Errorf("path %s, Authorization %q, X-Leak %q", req.path, req.header.Get("Authorization"), req.header.Get("X-Leak"))
	}
	if req.body["max_completion_tokens"] != float64(DefaultSummaryMaxTokens) {
		t.Errorf("max_completion_tokens %v", req.body["max_completion_tokens"])
	}
}

// Any OpenAI-compatible server behind a path prefix and a query (a proxy's tenant).
func TestOpenAICompatibleEndpointWithPrefixAndQuery(t *testing.T) {
	fp := newFakeProvider(t, reply{status: http.StatusOK, body: `{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`})
	s := newTestSummarizer(t, ProviderOpenAI, testConfig(fp.server.URL+"/team-a/v1?tenant=x&tenant=y"))
	summary, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()})
	if err != nil {
		t.Fatal(err)
	}
	if summary.Text != "ok" || summary.Usage != (conversation.Usage{}) {
		t.Errorf("summary %+v: want ok with no usage (none reported)", summary)
	}
	if req := fp.calls()[0]; req.path != "/team-a/v1/chat/completions" || req.query != "tenant=x&tenant=y" {
		t.Errorf("called %s?%s", req.path, req.query)
	}
}
