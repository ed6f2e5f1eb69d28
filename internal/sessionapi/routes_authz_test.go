package sessionapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/wire"
)

// reviewRecorder is a Session API whose token reviews accept every token as alice and whose
// access reviews allow only namespace "a", noting each access review.
type reviewRecorder struct {
	mu      sync.Mutex
	reviews []authzv1.ResourceAttributes
	srv     *httptest.Server
}

func newReviewRecorder(t *testing.T) *reviewRecorder {
	t.Helper()
	scheme := kubeAndParleyScheme(t)
	rec := &reviewRecorder{}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			switch o := obj.(type) {
			case *authnv1.TokenReview:
				o.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "alice"}}
			case *authzv1.SubjectAccessReview:
				rec.mu.Lock()
				rec.reviews = append(rec.reviews, *o.Spec.ResourceAttributes)
				rec.mu.Unlock()
				o.Status.Allowed = o.Spec.ResourceAttributes.Namespace == "a"
			}
			return nil
		},
	}).Build()
	// A TTL of one nanosecond keeps every answer out of the cache: each request is reviewed.
	s := &Server{Reader: kube, Writer: kube, Auth: &Authorizer{Client: kube, TTL: 1, NegativeTTL: 1}}
	rec.srv = httptest.NewServer(s.Handler())
	t.Cleanup(rec.srv.Close)
	return rec
}

// call sends method to the raw path (sent as written: no client-side cleaning or escaping)
// and returns the status and the access reviews it caused.
func (rec *reviewRecorder) call(t *testing.T, method, rawPath string) (int, []authzv1.ResourceAttributes) {
	t.Helper()
	rec.mu.Lock()
	rec.reviews = nil
	rec.mu.Unlock()
	req, err := http.NewRequest(method, rec.srv.URL, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = rawPath
	req.Header.Set("Authorization", "Bearer t")
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return resp.StatusCode, append([]authzv1.ResourceAttributes(nil), rec.reviews...)
}

// TestEveryRouteIsReviewedForItsAccess: each endpoint asks the SubjectAccessReview on
// conversations/history with the verb of what it does (reads get, writes create, a reset
// delete), for the conversation its path names.
func TestEveryRouteIsReviewedForItsAccess(t *testing.T) {
	rec := newReviewRecorder(t)
	base := wire.ConversationPath("a", "c")
	for _, c := range []struct{ method, endpoint, verb string }{
		{"GET", "", "get"},
		{"GET", "/messages", "get"},
		{"GET", "/messages?follow=true", "get"},
		{"POST", "/messages", "create"},
		{"POST", "/events", "create"},
		{"PUT", "/adapter-state", "create"},
		{"POST", "/checkpoints", "create"},
		{"POST", "/compact", "create"},
		{"POST", "/reset", "delete"},
		{"GET", "/resume", "get"},
		{"GET", "/state", "get"},
		{"POST", "/import", "create"},
		{"POST", "/transcript", "create"},
		{"GET", "/transcript", "get"},
		{"GET", "/transcripts", "get"},
	} {
		_, reviews := rec.call(t, c.method, base+c.endpoint)
		if len(reviews) == 0 {
			t.Errorf("%s %s: no access review", c.method, c.endpoint)
		}
		for _, r := range reviews {
			if r.Verb != c.verb || r.Namespace != "a" || (r.Name != "" && r.Name != "c") ||
				r.Resource != "conversations" || r.Subresource != HistorySubresource || r.Group != parleyv1alpha1.GroupVersion.Group {
				t.Errorf("%s %s reviewed as %+v, want verb %s on a/c conversations/history", c.method, c.endpoint, r, c.verb)
			}
		}
	}
}

// TestPathTricksReachNoOtherConversation: a caller allowed everything in namespace a and
// nothing in b writes paths that try to land on b's conversation, on another endpoint than
// the one reviewed, or on a look-alike of one. None is served as b's, none is served by a
// handler other than the one reviewed (a case variant or an extra segment reaches none), and
// whatever is reviewed names the namespace and conversation the handler reads.
func TestPathTricksReachNoOtherConversation(t *testing.T) {
	rec := newReviewRecorder(t)
	for _, c := range []struct {
		method, path string
		// served: a handler may run (for namespace a's conversation, reviewed as such).
		served bool
	}{
		{"GET", "/v1/namespaces/a/conversations/c/../../../b/conversations/c/state", false},
		{"GET", "/v1/namespaces/a/conversations/c/%2e%2e/%2e%2e/%2e%2e/b/conversations/c/state", false},
		{"GET", "/v1/namespaces/a/conversations/..%2f..%2fb%2fconversations%2fc/state", true},
		{"GET", "/v1/namespaces/a%2fconversations%2fx%2f..%2f..%2f..%2fb/conversations/c/state", true},
		{"GET", "/v1/namespaces/a/conversations/c%2fstate", true},
		{"GET", "//v1/namespaces/b/conversations/c/state", false},
		{"POST", "/v1/namespaces/a/conversations/c/RESET", false},
		{"POST", "/v1/namespaces/a/conversations/c/reset/", false},
		{"POST", "/v1/namespaces/a/conversations/c/reset/extra", false},
		{"POST", "/v1/namespaces/a/conversations/c/messages/../reset", false},
		{"POST", "/v1/namespaces/a/conversations/c/%72eset", true},
		{"GET", "/V1/namespaces/b/conversations/c/state", false},
		{"GET", wire.AggregatedPath + "/namespaces/a/conversations/c/log/../../../../b/conversations/c/log", false},
	} {
		status, reviews := rec.call(t, c.method, c.path)
		if status/100 == 2 {
			t.Errorf("%s %s: %d, want a refusal", c.method, c.path, status)
		}
		for _, r := range reviews {
			if r.Namespace == "b" {
				t.Errorf("%s %s: reviewed for namespace b (%+v), a handler for b's conversation ran", c.method, c.path, r)
			}
		}
		if !c.served && len(reviews) > 0 {
			t.Errorf("%s %s: %d access review(s), want none (no endpoint is at this path)", c.method, c.path, len(reviews))
		}
		if strings.Contains(strings.ToLower(c.path), "reset") {
			for _, r := range reviews {
				if r.Verb != "delete" {
					t.Errorf("%s %s: reviewed as %s, a reset is a delete", c.method, c.path, r.Verb)
				}
			}
		}
	}
}

// kubeAndParleyScheme holds the Kubernetes types and Parley's, for fake clients.
func kubeAndParleyScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, parleyv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}
