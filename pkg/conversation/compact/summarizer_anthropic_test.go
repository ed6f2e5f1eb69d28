package compact

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
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
  "usage": {"input_tokens": 2095, "output_tokens": 25, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 7, "service_tier": "standard"}
}`

const anthropicOverloaded = `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}`

func TestAnthropicSummarizerWireFormat(t *testing.T) {
	// Nothing from the environment: not a key, not a token, not a base URL.
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-the-environment")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leak: yes")
	fp := newFakeProvider(t, reply{status: http.StatusOK, body: anthropicOK})
	s := newTestSummarizer(t, ProviderAnthropic, testConfig(fp.server.URL))
	summary, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages(), MaxTokens: 512})
	if err != nil {
		t.Fatal(err)
	}
	if summary.Text != "The user asked for /etc/hosts. The agent read it and showed it." {
		t.Errorf("summary %q", summary.Text)
	}
	if want := (conversation.Usage{Input: 2095, Output: 25, CacheRead: 7, CacheWrite: 3}); summary.Usage != want {
		t.Errorf("usage %+v, want %+v", summary.Usage, want)
	}
	req := fp.calls()[0]
	if req.method != http.MethodPost || req.path != "/v1/messages" {
		t.Errorf("%s %s", req.method, req.path)
	}
	for header, want := range map[string]string{
		"X-Api-Key": testAPIKey, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json",
	} {
		if got := req.header.Get(header); got != want {
			t.Errorf("%s: %q, want %q", header, got, want)
		}
	}
	if _, ok := req.header["Authorization"]; ok {
		t.Error("Authorization sent to Anthropic")
	}
	if got := req.header.Get("X-Leak"); got != "" {
		t.Errorf("a header from the environment: X-Leak %q", got)
	}
	if req.body["model"] != "test-model" || req.body["max_tokens"] != float64(512) {
		t.Errorf("body %v", req.body)
	}
	if system := textOf(req.body["system"]); !strings.Contains(system, "You compact the history") {
		t.Errorf("system %v", req.body["system"])
	}
	msgs, _ := req.body["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("messages %v", req.body["messages"])
	}
	user, _ := msgs[0].(map[string]any)
	if user["role"] != "user" || !strings.Contains(textOf(user["content"]), secretText) {
		t.Errorf("user message %v", user)
	}
}

// textOf joins the text of a content value: a string or a list of text blocks.
func textOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	blocks, _ := v.([]any)
	var b strings.Builder
	for _, block := range blocks {
		if m, ok := block.(map[string]any); ok && m["type"] == "text" {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

func TestAnthropicSummarizerRetriesOverloaded(t *testing.T) {
	fp := newFakeProvider(t,
		reply{status: 529, body: anthropicOverloaded},
		reply{status: http.StatusTooManyRequests, headers: map[string]string{"retry-after": "1.2"}, body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`},
		reply{status: http.StatusOK, body: anthropicOK})
	s := newTestSummarizer(t, ProviderAnthropic, testConfig(fp.server.URL))
	if _, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()}); err != nil {
		t.Fatal(err)
	}
	// The SDK's backoff (0.5 s less jitter), then the server's 1.2 s.
	between(375*time.Millisecond, time.Minute, 1200*time.Millisecond, time.Minute)(t, fp.waits())
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
			"an error body that is not JSON",
			reply{status: http.StatusBadGateway, headers: map[string]string{"x-should-retry": "false", "Content-Type": "text/html"}, body: `<html>` + secretText + `</html>`},
			"502 Bad Gateway (after 1 attempt)",
		},
		{
			"no text",
			reply{status: http.StatusOK, body: `{"type":"message","role":"assistant","content":[{"type":"thinking","thinking":"…","signature":"x"}],"stop_reason":"max_tokens"}`},
			"no summary: no text content (stop_reason max_tokens)",
		},
		{
			"text that is not a string",
			reply{status: http.StatusOK, body: `{"type":"message","content":[{"type":"text","text":{"a":1}}],"stop_reason":"end_turn"}`},
			"no summary: no text content (stop_reason end_turn)",
		},
		{
			"malformed JSON",
			reply{status: http.StatusOK, body: `{"content": [{"type": "text", "text": "` + secretText},
			"200 OK: undecodable response body: truncated JSON",
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
			s := newTestSummarizer(t, ProviderAnthropic, testConfig(fp.server.URL))
			_, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()})
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Provider != "anthropic" || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("err %v, want it to say %q", err, tc.contains)
			}
			if len(apiErr.Message) > maxProviderMessage+len("…") {
				t.Errorf("provider message of %d bytes", len(apiErr.Message))
			}
			assertNoLeak(t, err)
		})
	}
}

// The Anthropic SDK's own error quotes the whole response body and the URL; ours carries
// only the status, the provider's error type and message.
func TestAnthropicErrorDoesNotQuoteTheResponse(t *testing.T) {
	body := `{"type":"error","error":{"type":"invalid_request_error","message":"bad request"},"echo":"` + secretText + `","request_id":"req_1"}`
	fp := newFakeProvider(t, reply{status: http.StatusBadRequest, body: body})
	s := newTestSummarizer(t, ProviderAnthropic, testConfig(fp.server.URL+"?key=query-secret"))
	_, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()})
	if err == nil {
		t.Fatal("want an error")
	}
	want := "summarizer anthropic: POST " + fp.server.URL + "/v1/messages: 400 Bad Request: invalid_request_error: bad request (after 1 attempt)"
	if err.Error() != want {
		t.Errorf("error\n %q\nwant\n %q", err, want)
	}
	assertNoLeak(t, err)
	if strings.Contains(err.Error(), "query-secret") {
		t.Errorf("error quotes the endpoint's query: %q", err)
	}
	if req := fp.calls()[0]; req.query != "key=query-secret" {
		t.Errorf("query %q not sent", req.query)
	}
}
