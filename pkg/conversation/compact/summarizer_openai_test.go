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
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
  "service_tier": "default"
}`

const openAIRateLimited = `{"error": {"message": "Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.", "type": "tokens", "param": null, "code": "rate_limit_exceeded"}}`

const openAIContextTooLong = `{"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}`

const secretText = "the launch code is 0000"

func foldedMessages() []conversation.Message {
	return newConv().user("show me /etc/hosts; "+secretText).call("toolu_1").result("127.0.0.1 localhost", "toolu_1").assistant("Here it is.").messages
}

func newTestOpenAI(t *testing.T, cfg HTTPConfig) (Summarizer, *sleepRecorder) {
	t.Helper()
	c, err := newOpenAICompleter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := &sleepRecorder{}
	c.caller.sleep = rec.sleep
	return &modelSummarizer{complete: c.complete}, rec
}

func TestOpenAISummarizerWireFormat(t *testing.T) {
	fp := newFakeProvider(t, reply{status: http.StatusOK, body: openAIOK})
	s, _ := newTestOpenAI(t, testConfig(fp.server.URL))
	summary, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages(), MaxTokens: 300})
	if err != nil {
		t.Fatal(err)
	}
	if summary != "The user asked for the hosts file; the agent read it." {
		t.Errorf("summary %q", summary)
	}
	calls := fp.calls()
	if len(calls) != 1 {
		t.Fatalf("%d requests", len(calls))
	}
	req := calls[0]
	if req.method != http.MethodPost || req.path != "/v1/chat/completions" {
		t.Errorf("%s %s", req.method, req.path)
	}
	if got := req.header.Get("Authorization"); got != "Bearer sk-test-key" {
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
	if system["role"] != "system" || !strings.Contains(system["content"].(string), "at most about 300 tokens") {
		t.Errorf("system message %v", system)
	}
	transcript, _ := user["content"].(string)
	if user["role"] != "user" || !strings.Contains(transcript, secretText) || !strings.Contains(transcript, "(tool call read id=toolu_1)") ||
		!strings.Contains(transcript, "(tool result id=toolu_1) 127.0.0.1 localhost") {
		t.Errorf("user message %v", user)
	}
}

func TestOpenAISummarizerRetries(t *testing.T) {
	cases := []struct {
		name      string
		script    []reply
		wantWaits func(t *testing.T, waits []time.Duration)
	}{
		{
			name: "429 with Retry-After in seconds",
			script: []reply{
				{status: http.StatusTooManyRequests, headers: map[string]string{"Retry-After": "2"}, body: openAIRateLimited},
				{status: http.StatusOK, body: openAIOK},
			},
			wantWaits: exactly(2 * time.Second),
		},
		{
			name: "429 with retry-after-ms wins over Retry-After",
			script: []reply{
				{status: http.StatusTooManyRequests, headers: map[string]string{"retry-after-ms": "250", "Retry-After": "1"}, body: openAIRateLimited},
				{status: http.StatusOK, body: openAIOK},
			},
			wantWaits: exactly(250 * time.Millisecond),
		},
		{
			name: "5xx twice with exponential backoff",
			script: []reply{
				{status: http.StatusInternalServerError, body: `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`},
				{status: http.StatusBadGateway, body: `<html>bad gateway</html>`},
				{status: http.StatusOK, body: openAIOK},
			},
			wantWaits: func(t *testing.T, waits []time.Duration) {
				if len(waits) != 2 || waits[0] < 50*time.Millisecond || waits[0] > 100*time.Millisecond ||
					waits[1] < 100*time.Millisecond || waits[1] > 200*time.Millisecond {
					t.Errorf("waits %v, want ~100ms then ~200ms with jitter", waits)
				}
			},
		},
		{
			name: "a dropped connection",
			script: []reply{
				{drop: true},
				{status: http.StatusOK, body: openAIOK},
			},
			wantWaits: func(t *testing.T, waits []time.Duration) {
				if len(waits) != 1 {
					t.Errorf("waits %v", waits)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fp := newFakeProvider(t, tc.script...)
			s, sleeps := newTestOpenAI(t, testConfig(fp.server.URL))
			summary, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()})
			if err != nil {
				t.Fatal(err)
			}
			if summary == "" || len(fp.calls()) != len(tc.script) {
				t.Errorf("summary %q after %d calls", summary, len(fp.calls()))
			}
			tc.wantWaits(t, sleeps.waits)
		})
	}
}

func exactly(want ...time.Duration) func(*testing.T, []time.Duration) {
	return func(t *testing.T, got []time.Duration) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("waits %v, want %v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("waits %v, want %v", got, want)
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
			name:     "x-should-retry false stops retries",
			script:   []reply{{status: http.StatusInternalServerError, headers: map[string]string{"x-should-retry": "false"}, body: `{"error":"boom"}`}},
			calls:    1,
			contains: []string{"500 Internal Server Error: boom"},
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
			name:     "undecodable body",
			script:   []reply{{status: http.StatusOK, body: `{"choices": [` + secretText}},
			calls:    1,
			contains: []string{"undecodable response body: invalid JSON"},
		},
		{
			name:     "wrong type",
			script:   []reply{{status: http.StatusOK, body: `{"choices": {"a": 1}}`}},
			calls:    1,
			contains: []string{`undecodable response body: field "choices" has type object`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fp := newFakeProvider(t, tc.script...)
			s, _ := newTestOpenAI(t, testConfig(fp.server.URL))
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
			if strings.Contains(err.Error(), secretText) {
				t.Errorf("error quotes content: %q", err)
			}
			if got := len(fp.calls()); got != tc.calls {
				t.Errorf("%d calls, want %d", got, tc.calls)
			}
		})
	}
}

func TestSummarizerAttemptTimeoutIsRetried(t *testing.T) {
	fp := newFakeProvider(t, reply{hang: true}, reply{hang: true})
	cfg := testConfig(fp.server.URL)
	cfg.AttemptTimeout, cfg.MaxAttempts = 50*time.Millisecond, 2
	s, sleeps := newTestOpenAI(t, cfg)
	_, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()})
	if err == nil || !strings.Contains(err.Error(), "attempt timed out (after 2 attempts)") {
		t.Fatalf("err %v", err)
	}
	if len(fp.calls()) != 2 || len(sleeps.waits) != 1 {
		t.Errorf("%d calls, %d waits", len(fp.calls()), len(sleeps.waits))
	}
}

func TestSummarizerStopsWhenTheCallerGivesUp(t *testing.T) {
	fp := newFakeProvider(t, reply{hang: true})
	s, sleeps := newTestOpenAI(t, testConfig(fp.server.URL))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := s.Summarize(ctx, SummaryRequest{Messages: foldedMessages()})
	if err == nil || !strings.Contains(err.Error(), "canceled: context deadline exceeded") {
		t.Fatalf("err %v", err)
	}
	if len(fp.calls()) != 1 || len(sleeps.waits) != 0 {
		t.Errorf("%d calls, %d waits after the caller gave up", len(fp.calls()), len(sleeps.waits))
	}
}

func TestSummarizerDoesNotWaitPastTheDeadline(t *testing.T) {
	fp := newFakeProvider(t, reply{status: http.StatusTooManyRequests, headers: map[string]string{"Retry-After": "3600"}, body: openAIRateLimited})
	s, sleeps := newTestOpenAI(t, testConfig(fp.server.URL))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := s.Summarize(ctx, SummaryRequest{Messages: foldedMessages()})
	if err == nil || !strings.Contains(err.Error(), "429 Too Many Requests: tokens/rate_limit_exceeded") {
		t.Fatalf("err %v", err)
	}
	if len(sleeps.waits) != 0 {
		t.Errorf("waited %v although the deadline comes first", sleeps.waits)
	}
}

func TestOpenAIWithoutKeySendsNoAuthorization(t *testing.T) {
	fp := newFakeProvider(t, reply{status: http.StatusOK, body: openAIOK})
	cfg := testConfig(fp.server.URL + "/v1/")
	cfg.APIKey = ""
	s, _ := newTestOpenAI(t, cfg)
	if _, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()}); err != nil {
		t.Fatal(err)
	}
	req := fp.calls()[0]
	if _, ok := req.header["Authorization"]; ok || req.path != "/v1/chat/completions" {
		t.Errorf("path %s, Authorization %q", req.path, req.header.Get("Authorization"))
	}
	if req.body["max_completion_tokens"] != float64(DefaultSummaryMaxTokens) {
		t.Errorf("max_completion_tokens %v", req.body["max_completion_tokens"])
	}
}
