package sessionapi

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/wire"
)

// TestConcurrentMissesShareOneReview: calls that miss the cache together, with one token and
// for one conversation, make one TokenReview and one SubjectAccessReview, not one per call.
// (Found by the Session API benchmark: 64 writers starting at once, and again at every
// expiry of the cache, each reviewed the same token.)
func TestConcurrentMissesShareOneReview(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var tokenReviews, accessReviews atomic.Int32
	release := make(chan struct{})
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			<-release // every caller is waiting on the cache miss before the review answers
			switch o := obj.(type) {
			case *authnv1.TokenReview:
				tokenReviews.Add(1)
				o.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "alice", UID: "u1"}}
			case *authzv1.SubjectAccessReview:
				accessReviews.Add(1)
				o.Status.Allowed = true
			}
			return nil
		},
	}).Build()
	a := &Authorizer{Client: c, TTL: time.Minute}
	conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}

	const callers = 32
	var wg sync.WaitGroup
	errs := make(chan string, callers)
	for range callers {
		wg.Go(func() {
			caller, p := a.authenticate(context.Background(), "the-token", "")
			if p == nil {
				p = a.authorize(context.Background(), caller, conv, AccessWrite)
			}
			if p != nil {
				errs <- p.Detail
			}
		})
	}
	time.Sleep(100 * time.Millisecond) // let the callers reach the review
	close(release)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n, m := tokenReviews.Load(), accessReviews.Load(); n != 1 || m != 1 {
		t.Errorf("%d TokenReviews and %d SubjectAccessReviews for %d concurrent calls, want 1 and 1", n, m, callers)
	}
}

// TestNamespaceReviewServesEveryConversation: when the caller may use every conversation of a
// namespace, one review answers for all of them; when only some names are granted
// (resourceNames), each conversation is asked about, and the others stay forbidden.
func TestNamespaceReviewServesEveryConversation(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		granted map[string]bool // names the authorizer allows; "" is the whole namespace
		allowed []string
		denied  []string
		reviews []string // the names asked about, in order
	}{
		{"every name", map[string]bool{"": true}, []string{"a", "b", "c"}, nil, []string{""}},
		{"only a", map[string]bool{"a": true}, []string{"a"}, []string{"b"}, []string{"", "a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reviews []string
			c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
					sar := obj.(*authzv1.SubjectAccessReview)
					name := sar.Spec.ResourceAttributes.Name
					reviews = append(reviews, name)
					sar.Status.Allowed = tc.granted[name]
					return nil
				},
			}).Build()
			a := &Authorizer{Client: c, TTL: time.Minute}
			alice := &caller{user: authnv1.UserInfo{Username: "alice", UID: "u1"}}
			check := func(name string) *wire.Problem {
				conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
				return a.authorize(context.Background(), alice, conv, AccessWrite)
			}
			for _, name := range tc.allowed {
				if p := check(name); p != nil {
					t.Errorf("%s: %d %s, want allowed", name, p.Status, p.Detail)
				}
			}
			for _, name := range tc.denied {
				if p := check(name); p == nil || p.Status != 403 {
					t.Errorf("%s: %v, want 403", name, p)
				}
			}
			// Asked again within the TTL: answered from the cache.
			for _, name := range append(tc.allowed, tc.denied...) {
				_ = check(name)
			}
			if !slices.Equal(reviews, tc.reviews) {
				t.Errorf("reviews of names %q, want %q", reviews, tc.reviews)
			}
		})
	}
}
