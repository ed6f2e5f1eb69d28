package compact

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

const anthropicOK = `{
  "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [
    {"type": "text", "text": "The user asked for /etc/hosts. "},
    {"type": "text", "text": "The agent read it and showed it."}
  ],
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "usage": {"input_tokens": 2095, "output_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "service_tier": "standard"}
}`

const anthropicOverloaded = `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}`

func newTestAnthropic(t *testing.T, cfg HTTPConfig) (Summarizer, *sleepRecorder) {
	t.Helper()
	c, err := newAnthropicCompleter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := &sleepRecorder{}
	c.caller.sleep = rec.sleep
	return &modelSummarizer{complete: c.complete}, rec
}

func TestAnthropicSummarizerWireFormat(t *testing.T) {
	fp := newFakeProvider(t, reply{status: http.StatusOK, body: anthropicOK})
	s, _ := newTestAnthropic(t, testConfig(fp.server.URL))
	summary, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages(), MaxTokens: 512})
	if err != nil {
		t.Fatal(err)
	}
	if summary != "The user asked for /etc/hosts. The agent read it and showed it." {
		t.Errorf("summary %q", summary)
	}
	req := fp.calls()[0]
	if req.method != http.MethodPost || req.path != "/v1/messages" {
		t.Errorf("%s %s", req.method, req.path)
	}
	for header, want := range map[string]string{
		"X-Api-Key": "sk-test-key", "Anthropic-Version": "2023-06-01", "Content-Type": "application/json",
	} {
		if got := req.header.Get(header); got != want {
			t.Errorf("%s: %q, want %q", header, got, want)
		}
	}
	if _, ok := req.header["Authorization"]; ok {
		t.Error("Authorization sent to Anthropic")
	}
	if req.body["model"] != "test-model" || req.body["max_tokens"] != float64(512) {
		t.Errorf("body %v", req.body)
	}
	if system, _ := req.body["system"].(string); !strings.Contains(system, "You compact the history") {
		t.Errorf("system %q", system)
	}
	msgs, _ := req.body["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("messages %v", req.body["messages"])
	}
	user, _ := msgs[0].(map[string]any)
	if content, _ := user["content"].(string); user["role"] != "user" || !strings.Contains(content, secretText) {
		t.Errorf("user message %v", user)
	}
}

func TestAnthropicSummarizerRetriesOverloaded(t *testing.T) {
	fp := newFakeProvider(t,
		reply{status: 529, body: anthropicOverloaded},
		reply{status: http.StatusTooManyRequests, headers: map[string]string{"retry-after": "7"}, body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`},
		reply{status: http.StatusOK, body: anthropicOK})
	s, sleeps := newTestAnthropic(t, testConfig(fp.server.URL))
	if _, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()}); err != nil {
		t.Fatal(err)
	}
	if len(sleeps.waits) != 2 || sleeps.waits[1] != 7*time.Second {
		t.Errorf("waits %v", sleeps.waits)
	}
	if got := fp.calls()[0].body["max_tokens"]; got != float64(DefaultSummaryMaxTokens) {
		t.Errorf("max_tokens %v", got)
	}
}

func TestAnthropicSummarizerErrors(t *testing.T) {
	cases := []struct {
		name     string
		reply    reply
		contains string
	}{
		{
			"authentication",
			reply{status: http.StatusUnauthorized, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`},
			"401 Unauthorized: authentication_error: invalid x-api-key (after 1 attempt)",
		},
		{
			"prompt too long",
			reply{status: http.StatusBadRequest, body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`},
			"400 Bad Request: invalid_request_error: prompt is too long",
		},
		{
			"no text",
			reply{status: http.StatusOK, body: `{"type":"message","role":"assistant","content":[{"type":"thinking","thinking":"…","signature":"x"}],"stop_reason":"max_tokens"}`},
			"no summary: no text content (stop_reason max_tokens)",
		},
		{
			"long provider message is cut",
			reply{status: http.StatusBadRequest, body: `{"type":"error","error":{"type":"invalid_request_error","message":"` + strings.Repeat("é", 400) + `"}}`},
			"é…",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fp := newFakeProvider(t, tc.reply)
			s, _ := newTestAnthropic(t, testConfig(fp.server.URL))
			_, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()})
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Provider != "anthropic" || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("err %v, want it to say %q", err, tc.contains)
			}
			if len(apiErr.Message) > maxProviderMessage+len("…") {
				t.Errorf("provider message of %d bytes", len(apiErr.Message))
			}
		})
	}
}

func TestNewSummarizer(t *testing.T) {
	ok := HTTPConfig{Endpoint: "https://api.example.test", Model: "m", APIKey: "k"}
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
		if _, err := NewSummarizer(provider, ok); err != nil {
			t.Errorf("%s: %v", provider, err)
		}
	}
	bad := []struct {
		provider string
		cfg      HTTPConfig
		want     string
	}{
		{"gemini", ok, `unknown summarizer provider "gemini"`},
		{ProviderOpenAI, HTTPConfig{Endpoint: "https://x"}, "model is required"},
		{ProviderAnthropic, HTTPConfig{Endpoint: "https://x", Model: "m"}, "API key is required"},
		{ProviderAnthropic, HTTPConfig{Model: "m", APIKey: "k"}, "invalid endpoint"},
		{ProviderOpenAI, HTTPConfig{Endpoint: "ftp://x", Model: "m"}, "want an http(s) URL"},
		{ProviderOpenAI, HTTPConfig{Endpoint: "http://[::1", Model: "m"}, "invalid endpoint"},
	}
	for _, tc := range bad {
		_, err := NewSummarizer(tc.provider, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: err %v, want %q", tc.provider, tc.cfg, err, tc.want)
		}
	}
}
