package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
)

// credentialTransport adds a credential to every request it sends, as a kubeconfig's
// transport does (a bearer token, an exec plugin's token): a redirect it follows carries it.
type credentialTransport struct{ base http.RoundTripper }

func (t credentialTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer kubeconfig-secret")
	return t.base.RoundTrip(r)
}

// A Session API (or anything answering at its URL) that redirects must not get the caller's
// credentials sent to the redirect's target, whichever transport adds them: no call nor
// follow stream follows a redirect.
func TestRedirectsAreNotFollowed(t *testing.T) {
	var stolen atomic.Int32
	// The target answers 403, which ends a call or a follow without retries either way.
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			stolen.Add(1)
		}
		w.WriteHeader(http.StatusForbidden)
	}))
	t.Cleanup(elsewhere.Close)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(api.Close)

	for name, opts := range map[string]Options{
		"token":               {URL: api.URL, Token: "pod-token"},
		"kubeconfig":          {URL: api.URL, HTTPClient: &http.Client{Transport: credentialTransport{http.DefaultTransport}}},
		"kubeconfig, through": {URL: api.URL, Aggregated: true, HTTPClient: &http.Client{Transport: credentialTransport{http.DefaultTransport}}},
	} {
		t.Run(name, func(t *testing.T) {
			stolen.Store(0)
			c, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			c.sleep = func(context.Context, time.Duration) error { return errors.New("no retries in this test") }
			_, err = c.Conversation(context.Background(), "ns", "c")
			if err == nil || !strings.Contains(err.Error(), "redirect") {
				t.Errorf("error %v, want one saying a redirect was not followed", err)
			}
			err = c.Follow(context.Background(), "ns", "c", 0, func(conversation.Message) error { return nil })
			if err == nil || !strings.Contains(err.Error(), "redirect") {
				t.Errorf("follow: error %v, want one saying a redirect was not followed", err)
			}
			if n := stolen.Load(); n != 0 {
				t.Errorf("%d request(s) with the caller's credentials reached the redirect's target", n)
			}
		})
	}
}
