package compact

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The endpoint a Conversation names receives the API key; a redirect is not followed, so the
// key (Authorization, or x-api-key, which Go's client keeps on a redirect to another host),
// and the history being summarised, go nowhere else, and a redirect to plain http never
// undoes the https the spec asked for.
func TestRedirectIsNotFollowed(t *testing.T) {
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			elsewhere := newFakeProvider(t) // answers nothing: any request is unexpected
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.server.URL+r.URL.Path, http.StatusTemporaryRedirect)
			}))
			t.Cleanup(redirector.Close)
			s := newTestSummarizer(t, provider, testConfig(redirector.URL))
			if _, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages(), MaxTokens: 512}); err == nil {
				t.Error("a summary through a redirect")
			}
			if calls := elsewhere.calls(); len(calls) > 0 {
				t.Fatalf("the redirect was followed: %d requests elsewhere, the first with x-api-key %q and Authorization %q",
					len(calls), calls[0].header.Get("X-Api-Key"), calls[0].header.Get("Authorization"))
			}
		})
	}
}
