package compact

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// answer is a provider that gives one fixed JSON answer, without a network.
type answer struct {
	status int
	body   []byte
}

func (a answer) RoundTrip(r *http.Request) (*http.Response, error) {
	h := http.Header{"Content-Type": {"application/json"}}
	return &http.Response{StatusCode: a.status, Header: h, Body: io.NopCloser(bytes.NewReader(a.body)), Request: r}, nil
}

// FuzzSummarizerResponse feeds any status and body, through the SDKs, to both providers'
// answer handling: the answer is a trimmed, non-empty summary (2xx only) or an *APIError with
// that status, one attempt, and a short, valid UTF-8 message that never quotes a 2xx body
// (which holds conversation content: errors must not) nor the key.
func FuzzSummarizerResponse(f *testing.F) {
	f.Add(false, uint16(0), []byte(`{"choices":[{"message":{"content":" the summary \n"},"finish_reason":"stop"}]}`))
	f.Add(false, uint16(0), []byte(`{"choices":[{"message":{"content":null,"refusal":"no: secret text"}}]}`))
	f.Add(true, uint16(0), []byte(`{"type":"message","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"the summary"}],"stop_reason":"end_turn"}`))
	f.Add(true, uint16(0), []byte(`{"content":[{"type":"text","text":"   "}],"stop_reason":"max_tokens"}`))
	f.Add(false, uint16(200), []byte(openAIContextTooLong))
	f.Add(false, uint16(229), []byte(`{"error":"plain message"}`))
	f.Add(true, uint16(329), []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	f.Fuzz(func(t *testing.T, anthropic bool, status uint16, body []byte) {
		code := 200 + int(status)%400
		cfg := HTTPConfig{
			Endpoint: "http://provider.test", Model: "m", APIKey: "sk-fuzz-key", MaxAttempts: 1,
			HTTPClient: &http.Client{Transport: answer{code, body}},
		}
		var complete completeFunc
		if anthropic {
			c, err := newAnthropicCompleter(cfg)
			if err != nil {
				t.Fatal(err)
			}
			complete = c.complete
		} else {
			c, err := newOpenAICompleter(cfg)
			if err != nil {
				t.Fatal(err)
			}
			complete = c.complete
		}
		summary, err := complete(context.Background(), "system", "user", 100)
		if err == nil {
			if code >= 300 {
				t.Fatalf("a summary from status %d", code)
			}
			if summary.Text == "" || summary.Text != strings.TrimSpace(summary.Text) {
				t.Fatalf("summary %q is empty or not trimmed", summary.Text)
			}
			return
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) {
			t.Fatalf("error %v is not an *APIError", err)
		}
		if apiErr.StatusCode != code || apiErr.Attempts != 1 {
			t.Fatalf("error says status %d after %d attempts, want %d after 1", apiErr.StatusCode, apiErr.Attempts, code)
		}
		if !utf8.ValidString(apiErr.Message) || len(apiErr.Message) > maxProviderMessage+len("…") {
			t.Fatalf("provider message of %d bytes, or not UTF-8: %q", len(apiErr.Message), apiErr.Message)
		}
		if quoted := bytes.TrimSpace(body); code < 300 && len(quoted) >= 8 && strings.Contains(err.Error(), string(quoted)) {
			t.Fatalf("error quotes the response body: %v", err)
		}
		for _, secret := range []string{"secret text", "the summary", "sk-fuzz-key"} {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error quotes the response: %v", err)
			}
		}
	})
}

// A 2xx other than 200 with no usable answer is reported with its own status, not as
// "200 OK" (found by FuzzSummarizerResponse).
func TestAnswerErrorKeepsTheStatus(t *testing.T) {
	c, err := newOpenAICompleter(HTTPConfig{
		Endpoint: "http://provider.test", Model: "m", MaxAttempts: 1,
		HTTPClient: &http.Client{Transport: answer{http.StatusAccepted, []byte(`{"choices":[]}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.complete(context.Background(), "s", "u", 10)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusAccepted || !strings.Contains(err.Error(), "202 Accepted") {
		t.Fatalf("got %v, want an APIError with status 202", err)
	}
}

// A body of null decodes, in both SDKs, to no answer and no error (found by
// FuzzSummarizerResponse: a nil dereference).
func TestNullResponse(t *testing.T) {
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
		s, err := NewSummarizer(provider, HTTPConfig{
			Endpoint: "http://provider.test", Model: "m", APIKey: "k", MaxAttempts: 1,
			HTTPClient: &http.Client{Transport: answer{http.StatusOK, []byte("null")}},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()})
		if err == nil || !strings.Contains(err.Error(), "200 OK: no summary: a response of null (after 1 attempt)") {
			t.Errorf("%s: %v", provider, err)
		}
	}
}

// A stop or finish reason that is not UTF-8, or is long, is quoted valid and bounded (found by
// FuzzSummarizerResponse in CI: the Anthropic SDK keeps the bytes of stop_reason as sent).
func TestReasonIsQuotedValidAndBounded(t *testing.T) {
	long := strings.Repeat("x", 2*maxProviderMessage)
	for _, tc := range []struct {
		provider string
		body     string
	}{
		{ProviderAnthropic, "{\"content\":[],\"stop_reason\":\"max_token\xf3\"}"},
		{ProviderAnthropic, `{"content":[],"stop_reason":"` + long + `"}`},
		{ProviderOpenAI, "{\"choices\":[{\"message\":{\"content\":\"\"},\"finish_reason\":\"len\xf3\"}]}"},
		{ProviderOpenAI, `{"choices":[{"message":{"content":""},"finish_reason":"` + long + `"}]}`},
	} {
		s, err := NewSummarizer(tc.provider, HTTPConfig{
			Endpoint: "http://provider.test", Model: "m", APIKey: "k", MaxAttempts: 1,
			HTTPClient: &http.Client{Transport: answer{http.StatusOK, []byte(tc.body)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()})
		var apiErr *APIError
		if !errors.As(err, &apiErr) {
			t.Fatalf("%s: %v, want an *APIError", tc.provider, err)
		}
		if !utf8.ValidString(apiErr.Message) || len(apiErr.Message) > maxProviderMessage+len("…") || strings.Contains(apiErr.Message, long) {
			t.Errorf("%s: message of %d bytes, or not UTF-8: %q", tc.provider, len(apiErr.Message), apiErr.Message)
		}
	}
}
