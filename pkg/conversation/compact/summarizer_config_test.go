package compact

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
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

// The SDKs append their own path to the base URL: it is the endpoint without that path.
func TestSDKBase(t *testing.T) {
	cases := []struct{ endpoint, apiPath, sdkPath, want string }{
		{"https://api.openai.com", openAIChatPath, openAISDKPath, "https://api.openai.com/v1/"},
		{"http://vllm.ns.svc:8000/openai", openAIChatPath, openAISDKPath, "http://vllm.ns.svc:8000/openai/v1/"},
		{"https://proxy.example/team-a/v1?tenant=x", openAIChatPath, openAISDKPath, "https://proxy.example/team-a/v1/"},
		{"https://api.anthropic.com", anthropicMessagesPath, anthropicSDKPath, "https://api.anthropic.com/"},
		{"https://gw.example/anthropic/v1/messages", anthropicMessagesPath, anthropicSDKPath, "https://gw.example/anthropic/"},
	}
	for _, tc := range cases {
		u, err := resolveEndpoint(tc.endpoint, tc.apiPath)
		if err != nil {
			t.Fatal(err)
		}
		if got := sdkBase(u, tc.sdkPath); got != tc.want {
			t.Errorf("sdkBase(%s) = %s, want %s", tc.endpoint, got, tc.want)
		}
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

// What the old hand-written clients accepted, through the SDKs to a real server: a base URL
// with or without /v1 (vLLM, Ollama and LiteLLM document theirs with it), behind a prefix,
// or the whole API URL.
func TestEndpointFormsReachTheAPIPath(t *testing.T) {
	cases := []struct{ provider, suffix, body, wantPath string }{
		{ProviderOpenAI, "", openAIOK, "/v1/chat/completions"},
		{ProviderOpenAI, "/", openAIOK, "/v1/chat/completions"},
		{ProviderOpenAI, "/v1", openAIOK, "/v1/chat/completions"},
		{ProviderOpenAI, "/v1/", openAIOK, "/v1/chat/completions"},
		{ProviderOpenAI, "/v1/chat/completions", openAIOK, "/v1/chat/completions"},
		{ProviderOpenAI, "/openai", openAIOK, "/openai/v1/chat/completions"},
		{ProviderOpenAI, "/llm/v1/", openAIOK, "/llm/v1/chat/completions"},
		{ProviderAnthropic, "", anthropicOK, "/v1/messages"},
		{ProviderAnthropic, "/v1", anthropicOK, "/v1/messages"},
		{ProviderAnthropic, "/v1/messages", anthropicOK, "/v1/messages"},
		{ProviderAnthropic, "/gw/anthropic", anthropicOK, "/gw/anthropic/v1/messages"},
	}
	for _, tc := range cases {
		fp := newFakeProvider(t, reply{status: http.StatusOK, body: tc.body})
		s := newTestSummarizer(t, tc.provider, testConfig(fp.server.URL+tc.suffix))
		if _, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()}); err != nil {
			t.Errorf("%s %q: %v", tc.provider, tc.suffix, err)
			continue
		}
		if got := fp.calls()[0].path; got != tc.wantPath {
			t.Errorf("%s %q: called %s, want %s", tc.provider, tc.suffix, got, tc.wantPath)
		}
	}
}
