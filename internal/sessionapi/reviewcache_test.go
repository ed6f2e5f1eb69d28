package sessionapi

import (
	"context"
	"encoding/base64"
	"fmt"
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

// countingReviewer accepts the token "good" (for whichever audience is asked) and counts the
// TokenReviews it answers.
func countingReviewer(t *testing.T, reviews *atomic.Int32, asked *[][]string) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			if tr, ok := obj.(*authnv1.TokenReview); ok {
				reviews.Add(1)
				if asked != nil {
					*asked = append(*asked, tr.Spec.Audiences)
				}
				if tr.Spec.Token == "good" || tr.Spec.Token == parleyJWT {
					tr.Status = authnv1.TokenReviewStatus{
						Authenticated: true, Audiences: tr.Spec.Audiences,
						User: authnv1.UserInfo{Username: "alice", UID: "u1"},
					}
				}
			}
			return nil
		},
	}).Build()
}

// parleyJWT is shaped like a projected token for audience parley (unsigned: the reviewer decides).
var parleyJWT = "e30." + base64.RawURLEncoding.EncodeToString([]byte(`{"aud":["parley"]}`)) + ".sig"

// TestJunkFloodSparesKnownCallers: with caches far smaller than a flood of junk tokens, a
// caller known before the flood stays known (no new review), and each junk token costs one
// TokenReview, not one per audience.
func TestJunkFloodSparesKnownCallers(t *testing.T) {
	var reviews atomic.Int32
	a := &Authorizer{Client: countingReviewer(t, &reviews, nil), TTL: time.Minute, MaxEntries: 100}
	ctx := context.Background()
	if _, p := a.authenticate(ctx, "good", ""); p != nil {
		t.Fatal(p.Detail)
	}
	for i := range 2000 {
		if _, p := a.authenticate(ctx, fmt.Sprintf("junk-%d", i), ""); p == nil || p.Status != 401 {
			t.Fatalf("junk token %d: %v", i, p)
		}
	}
	if n := reviews.Load(); n != 2001 {
		t.Errorf("%d TokenReviews for one good and 2,000 junk tokens, want 2,001 (one per token)", n)
	}
	if _, p := a.authenticate(ctx, "good", ""); p != nil {
		t.Fatal(p.Detail)
	}
	if n := reviews.Load(); n != 2001 {
		t.Error("the known caller was reviewed again after the flood: the flood evicted it")
	}
}

// TestOneReviewPerToken: a projected token for parley is reviewed for parley; any other token
// for the API server's audiences; either once.
func TestOneReviewPerToken(t *testing.T) {
	var reviews atomic.Int32
	var asked [][]string
	a := &Authorizer{Client: countingReviewer(t, &reviews, &asked)}
	for _, tok := range []string{parleyJWT, "good", "junk"} {
		_, _ = a.authenticate(context.Background(), tok, "")
	}
	want := fmt.Sprint([][]string{{wire.Audience}, nil, nil})
	if got := fmt.Sprint(asked); got != want || reviews.Load() != 3 {
		t.Errorf("audiences asked %s in %d reviews, want %s in 3", got, reviews.Load(), want)
	}
}

// TestUnknownTokensPerSourceAreLimited: past its burst, a source address's unknown tokens are
// answered 429 before any review; another address is not affected.
func TestUnknownTokensPerSourceAreLimited(t *testing.T) {
	var reviews atomic.Int32
	now := time.Unix(0, 0)
	a := &Authorizer{
		Client: countingReviewer(t, &reviews, nil), Reviews: ReviewLimits{PerSource: Rate{PerSecond: 1, Burst: 5}},
		now: func() time.Time { return now },
	}
	var throttled int
	for i := range 20 {
		if _, p := a.authenticate(context.Background(), fmt.Sprintf("junk-%d", i), "10.0.0.1"); p.Status == 429 {
			throttled++
		}
	}
	if reviews.Load() != 5 || throttled != 15 {
		t.Errorf("%d reviews and %d answers 429 for 20 junk tokens, want 5 and 15", reviews.Load(), throttled)
	}
	if _, p := a.authenticate(context.Background(), "good", "10.0.0.2"); p != nil {
		t.Errorf("another address: %v", p)
	}
}

// TestAccessKeyCoversTheWholeUser: two callers of one username and UID with other groups or
// extra are judged apart.
func TestAccessKeyCoversTheWholeUser(t *testing.T) {
	attrs := &authzv1.ResourceAttributes{Namespace: "ns", Verb: "get"}
	base := authnv1.UserInfo{Username: "alice", UID: "u1", Groups: []string{"a", "b"}, Extra: map[string]authnv1.ExtraValue{"k": {"1"}}}
	same := base
	same.Groups = []string{"b", "a"}
	if accessKey(base, attrs) != accessKey(same, attrs) {
		t.Error("the order of groups changed the key")
	}
	for name, u := range map[string]authnv1.UserInfo{
		"groups": {Username: "alice", UID: "u1", Groups: []string{"a", "b", "admins"}, Extra: base.Extra},
		"extra":  {Username: "alice", UID: "u1", Groups: base.Groups, Extra: map[string]authnv1.ExtraValue{"k": {"2"}}},
		"split":  {Username: "alice", UID: "u1", Groups: []string{"a\x00b"}, Extra: base.Extra},
	} {
		if accessKey(u, attrs) == accessKey(base, attrs) {
			t.Errorf("%s: another user info gave the same key", name)
		}
	}
}

// TestReviewsInFlightAreCapped: past the cap, a review waits at most reviewWait, then 503.
func TestReviewsInFlightAreCapped(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	release := make(chan struct{})
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			<-release
			return nil
		},
	}).Build()
	a := &Authorizer{Client: c, Reviews: ReviewLimits{InFlight: 1}}
	go func() { _, _ = a.authenticate(context.Background(), "first", "") }()
	time.Sleep(50 * time.Millisecond)
	_, p := a.authenticate(context.Background(), "second", "")
	close(release)
	if p == nil || p.Status != 503 {
		t.Errorf("a second review past a cap of one: %v, want 503", p)
	}
}

// TestAccessReviewsPerIdentityAreLimited: a caller that names ever new conversations it may
// not read (each answer is cached for its own name) costs a bounded number of
// SubjectAccessReviews, then 429 before any review; another identity is reviewed as before.
func TestAccessReviewsPerIdentityAreLimited(t *testing.T) {
	var reviews atomic.Int32
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			reviews.Add(1) // denied: Status.Allowed stays false
			return nil
		},
	}).Build()
	now := time.Unix(0, 0)
	a := &Authorizer{Client: c, Reviews: ReviewLimits{PerIdentity: Rate{PerSecond: 1, Burst: 5}}, now: func() time.Time { return now }}
	mallory := &caller{user: authnv1.UserInfo{Username: "mallory", UID: "m1"}}
	var throttled int
	for i := range 20 {
		conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i), Name: fmt.Sprintf("c-%d", i)}}
		switch p := a.authorize(context.Background(), mallory, conv, AccessRead); {
		case p == nil:
			t.Fatal("a denied caller was allowed")
		case p.Status == 429:
			throttled++
		}
	}
	if reviews.Load() != 5 || throttled < 15 {
		t.Errorf("%d reviews and %d answers 429 for 20 conversations nobody may read, want 5 and at least 15", reviews.Load(), throttled)
	}
	alice := &caller{user: authnv1.UserInfo{Username: "alice", UID: "u1"}}
	conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "c"}}
	if p := a.authorize(context.Background(), alice, conv, AccessRead); p == nil || p.Status != 403 {
		t.Errorf("another identity: %v, want 403 after its own reviews", p)
	}
}
