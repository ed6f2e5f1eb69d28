package compact

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestResolveEndpoint(t *testing.T) {
	cases := map[string]string{
		"https://api.openai.com":                     "https://api.openai.com/v1/chat/completions",
		"https://api.openai.com/":                    "https://api.openai.com/v1/chat/completions",
		"https://api.openai.com/v1":                  "https://api.openai.com/v1/chat/completions",
		"https://api.openai.com/v1/":                 "https://api.openai.com/v1/chat/completions",
		"https://llm.internal/v1/chat/completions":   "https://llm.internal/v1/chat/completions",
		"http://vllm.ns.svc:8000/openai":             "http://vllm.ns.svc:8000/openai/v1/chat/completions",
		" https://proxy.example/team-a/v1?tenant=x ": "https://proxy.example/team-a/v1/chat/completions?tenant=x",
	}
	for in, want := range cases {
		u, err := resolveEndpoint(in, openAIChatPath)
		if err != nil || u.String() != want {
			t.Errorf("resolveEndpoint(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	u, err := resolveEndpoint("https://api.anthropic.com", anthropicMessagesPath)
	if err != nil || u.String() != "https://api.anthropic.com/v1/messages" {
		t.Errorf("anthropic: %v %v", u, err)
	}
}

func TestErrorsHideCredentialsInTheEndpoint(t *testing.T) {
	u, err := url.Parse("https://user:secret@llm.example/v1/chat/completions?key=secret#frag")
	if err != nil {
		t.Fatal(err)
	}
	if got := redactURL(u); strings.Contains(got, "secret") || got != "https://llm.example/v1/chat/completions" {
		t.Errorf("redactURL = %q", got)
	}
}

func TestRetryAfter(t *testing.T) {
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	cases := []struct {
		headers map[string]string
		min     time.Duration
		max     time.Duration
	}{
		{map[string]string{}, 0, 0},
		{map[string]string{"Retry-After": "3"}, 3 * time.Second, 3 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, 500 * time.Millisecond},
		{map[string]string{"Retry-After": "-1"}, 0, 0},
		{map[string]string{"Retry-After": "soon"}, 0, 0},
		{map[string]string{"Retry-After": future}, 59 * time.Minute, time.Hour},
		{map[string]string{"Retry-After": "Mon, 02 Jan 2006 15:04:05 GMT"}, 0, 0},
		{map[string]string{"retry-after-ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{map[string]string{"retry-after-ms": "nope", "Retry-After": "9"}, 9 * time.Second, 9 * time.Second},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.headers {
			h.Set(k, v)
		}
		if got := retryAfter(h); got < tc.min || got > tc.max {
			t.Errorf("retryAfter(%v) = %v, want in [%v, %v]", tc.headers, got, tc.min, tc.max)
		}
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	for attempt, base := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 6: 30 * time.Second, 60: 30 * time.Second} {
		for range 50 {
			d := backoff(time.Second, 30*time.Second, attempt)
			if d < base/2 || d > base {
				t.Fatalf("attempt %d: %v, want in [%v, %v]", attempt, d, base/2, base)
			}
		}
	}
}

func TestTruncateKeepsRunes(t *testing.T) {
	if got := truncate("  short  ", 10); got != "short" {
		t.Errorf("%q", got)
	}
	got := truncate(strings.Repeat("日", 10), 10) // 30 bytes
	if got != "日日日…" {
		t.Errorf("%q", got)
	}
}

func TestSleepContext(t *testing.T) {
	if err := sleepContext(t.Context(), time.Millisecond); err != nil {
		t.Errorf("sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := sleepContext(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("sleep after cancel: %v", err)
	}
}

// Through the public constructor, with the real wait between attempts.
func TestNewSummarizerRetriesForReal(t *testing.T) {
	fp := newFakeProvider(t,
		reply{status: http.StatusServiceUnavailable, body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`},
		reply{status: http.StatusOK, body: anthropicOK})
	cfg := testConfig(fp.server.URL)
	cfg.InitialBackoff = time.Millisecond
	s, err := NewSummarizer(ProviderAnthropic, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()}); err != nil {
		t.Fatal(err)
	}
	if len(fp.calls()) != 2 {
		t.Errorf("%d calls", len(fp.calls()))
	}
}
