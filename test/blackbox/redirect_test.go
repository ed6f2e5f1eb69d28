package blackbox_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// summarizerRedirectTakesTheKeyNowhere: the summarizer endpoint a Conversation names answers
// with a redirect to another host. The manager does not follow it: the other host never
// receives the API key (Go's client keeps x-api-key, Anthropic's header, on such a redirect)
// nor the history.
func summarizerRedirectTakesTheKeyNowhere(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "redirects")
	key := randomKey()
	e.create(ctx, t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: summarizerSecret}, StringData: map[string]string{"apiKey": key}})
	elsewhere := newRecorder(t)
	var redirected atomic.Int64
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") == key {
			redirected.Add(1)
		}
		target := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1) + r.URL.Path
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)

	conv := withSummarizer(historyOnly(ns, "redirected"), redirector.URL)
	conv.Spec.Context.Summarizer.Provider = parleyv1alpha1.SummarizerAnthropic
	e.conversation(ctx, t, conv)
	agent := e.agentToken(ctx, t, ns)
	if res, body, err := e.do(ctx, http.MethodPost, convPath(ns, conv.Name)+"/messages", agent,
		appendBody("r", 30, strings.Repeat("words ", 50))); err != nil || res.StatusCode >= 300 {
		t.Fatalf("append: %v %v %s", err, res, body)
	}
	e.eventually(ctx, t, "the manager calls the summarizer endpoint with the key", func() error {
		if redirected.Load() == 0 {
			return fmt.Errorf("no call yet")
		}
		return nil
	})
	time.Sleep(2 * time.Second) // a redirect followed arrives within the same call
	if all, withKey := elsewhere.seen(key); all > 0 {
		t.Errorf("the host the summarizer endpoint redirected to received %d requests, %d with the API key", all, withKey)
	}
}
