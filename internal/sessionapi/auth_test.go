package sessionapi

import (
	"context"
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
			caller, p := a.authenticate(context.Background(), "the-token")
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
