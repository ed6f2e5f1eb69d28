package sessionapi

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/wire"
)

// Access is what a request does to a conversation, mapped to verbs on the virtual subresource
// conversations/history: read (get), write (create), reset (delete).
type Access string

// Accesses.
const (
	AccessRead  Access = "get"
	AccessWrite Access = "create"
	AccessReset Access = "delete"
)

// HistorySubresource is the virtual subresource RBAC rules name to grant Session API access.
const HistorySubresource = "history"

// Extra keys of a ServiceAccount token bound to a pod.
const (
	extraPodName = "authentication.kubernetes.io/pod-name"
	extraPodUID  = "authentication.kubernetes.io/pod-uid"
)

// caller is an authenticated identity.
type caller struct {
	user   authnv1.UserInfo
	podKey string // "<namespace>/<pod name>" when the token is bound to a pod
	podUID string
}

// Authorizer authenticates bearer tokens with TokenReview and authorises with
// SubjectAccessReview, caching both results briefly and boundedly. A token bound to a pod may
// only touch the conversation whose agent pod that is: agent A cannot reach conversation B
// even in the same namespace with the same ServiceAccount.
//
// What a flood of reviews could cost is bounded (see reviewcache.go): one TokenReview per
// token, positive and negative answers cached apart with LRU eviction (a flood of junk never
// evicts a known caller), TokenReviews one source address may cause limited per second, and
// reviews in flight capped.
type Authorizer struct {
	// Client creates TokenReviews and SubjectAccessReviews (the manager's own client).
	Client client.Client
	// TTL bounds how long an accepted token or an access answer is trusted, NegativeTTL how
	// long a refused token is; MaxEntries bounds each cache.
	TTL         time.Duration
	NegativeTTL time.Duration
	MaxEntries  int
	// Reviews bounds the reviews floods could cost.
	Reviews ReviewLimits
	now     func() time.Time

	init       sync.Once
	caches     *reviewCaches
	sources    *keyedLimiter
	identities *keyedLimiter
	slots      chan struct{}
	// reviews lets concurrent requests that miss the cache for the same token, or the same
	// access, share one review: a burst of calls asks the API server once, not once per call.
	reviews singleflight.Group
}

// Review defaults.
const (
	DefaultReviewTTL         = 10 * time.Second
	DefaultNegativeReviewTTL = 5 * time.Second
	DefaultReviewEntries     = 10_000
	DefaultReviewsInFlight   = 32
	// reviewWait bounds how long a review waits for a slot before the request gets 503.
	reviewWait = time.Second
)

// ReviewLimits bound what floods of reviews may cost. A zero field takes its default; a
// negative one switches that bound off.
type ReviewLimits struct {
	// PerSource limits the TokenReviews that requests from one source address may cause,
	// checked before the review (429 past it).
	PerSource Rate
	// PerIdentity limits the SubjectAccessReviews one identity may cause, checked before the
	// review (429 past it): answers are cached per conversation, so a caller naming ever new
	// conversations (or namespaces) it may not read would otherwise cost a review each.
	PerIdentity Rate
	// InFlight caps the reviews waiting on the API server at once (503 past it).
	InFlight int
}

// DefaultReviewsPerSource: a source address (an agent pod; the API server for callers through
// its service proxy) brings a token the replica does not know a few times a minute, and a
// junk-token flood from one address costs a bounded number of TokenReviews.
var DefaultReviewsPerSource = Rate{PerSecond: 20, Burst: 40}

// DefaultReviewsPerIdentity: an identity allowed a whole namespace costs one review per
// namespace per TTL, one allowed conversation by conversation one per conversation; either
// stays far below this, and a flood of names from one token costs a bounded number.
var DefaultReviewsPerIdentity = Rate{PerSecond: 50, Burst: 100}

// Flags binds the review bounds to fs as --session-api-… flags.
func (l *ReviewLimits) Flags(fs *flag.FlagSet) {
	fs.Float64Var(&l.PerSource.PerSecond, "session-api-source-review-rate", DefaultReviewsPerSource.PerSecond,
		"TokenReviews per second that requests from one source address may cause, checked before the review "+
			"(429 past it; bursts of twice as many). Tokens the replica already knows cost none.")
	fs.Float64Var(&l.PerIdentity.PerSecond, "session-api-identity-review-rate", DefaultReviewsPerIdentity.PerSecond,
		"SubjectAccessReviews per second that one identity's requests may cause, checked before the review "+
			"(429 past it; bursts of twice as many). Access answers already cached cost none.")
	fs.IntVar(&l.InFlight, "session-api-max-reviews-in-flight", DefaultReviewsInFlight,
		"TokenReviews and SubjectAccessReviews a replica waits on at once (503 past it).")
}

func (a *Authorizer) setup() {
	a.init.Do(func() {
		fill(&a.TTL, DefaultReviewTTL)
		fill(&a.NegativeTTL, DefaultNegativeReviewTTL)
		fill(&a.MaxEntries, DefaultReviewEntries)
		fill(&a.Reviews.InFlight, DefaultReviewsInFlight)
		fillRate(&a.Reviews.PerSource, DefaultReviewsPerSource)
		fillRate(&a.Reviews.PerIdentity, DefaultReviewsPerIdentity)
		a.caches = newReviewCaches(a.MaxEntries, clockFunc(a.clock))
		a.sources = newKeyedLimiter(a.Reviews.PerSource, maxLimiterKeys, clockFunc(a.clock))
		a.identities = newKeyedLimiter(a.Reviews.PerIdentity, maxLimiterKeys, clockFunc(a.clock))
		if a.Reviews.InFlight > 0 {
			a.slots = make(chan struct{}, a.Reviews.InFlight)
		}
	})
}

// reviewed is what a shared review found: a result to use, or a problem (not cached).
type reviewed[T any] struct {
	value   T
	problem *wire.Problem
}

// review runs fill once for concurrent callers with the same key.
func review[T any](a *Authorizer, key string, fill func() (T, *wire.Problem)) (T, *wire.Problem) {
	v, _, _ := a.reviews.Do(key, func() (any, error) {
		value, p := fill()
		return reviewed[T]{value: value, problem: p}, nil
	})
	r := v.(reviewed[T])
	return r.value, r.problem
}

// create creates a review once a review slot is free; a review that found none in time, or
// that the API server did not answer, is a 503 saying so.
func (a *Authorizer) create(ctx context.Context, obj client.Object, what string) *wire.Problem {
	if a.slots != nil {
		wait, cancel := context.WithTimeout(ctx, reviewWait)
		defer cancel()
		select {
		case a.slots <- struct{}{}:
			defer func() { <-a.slots }()
		case <-wait.Done():
			return problem(503, wire.ProblemUnavailable, "Service Unavailable", "too many reviews are waiting on the API server")
		}
	}
	if err := a.Client.Create(ctx, obj); err != nil {
		return problem(503, wire.ProblemUnavailable, "Service Unavailable", "the API server could not review the "+what)
	}
	return nil
}

var errNotAuthenticated = problem(401, wire.ProblemUnauthorized, "Unauthorized",
	"the token was not accepted (expired, revoked, or for neither audience parley nor the API server)")

// authenticate returns the token's identity, or a 401 problem. source is the request's
// address: a token not in the caches costs a review, which source's budget must allow ("":
// none is charged, for a stream already authenticated).
func (a *Authorizer) authenticate(ctx context.Context, token, source string) (*caller, *wire.Problem) {
	a.setup()
	if token == "" {
		return nil, problem(401, wire.ProblemUnauthorized, "Unauthorized",
			"send a bearer token: the pod's projected ServiceAccount token with audience parley, or your own")
	}
	key := sha256.Sum256([]byte(token))
	if c, known := a.caches.token(key); known {
		if c == nil {
			return nil, errNotAuthenticated
		}
		return c, nil
	}
	c, p := review(a, "token\x00"+string(key[:]), func() (*caller, *wire.Problem) {
		// A caller that missed the cache just as the previous shared review filled it.
		if c, known := a.caches.token(key); known {
			return c, nil
		}
		if source != "" {
			// Retry-After: 1 s covers the wait for one token at any rate of 1/s or more.
			if d := a.sources.take(source); d > 0 {
				return nil, problem(429, wire.ProblemOverloaded, "Too Many Requests", "too many unknown tokens from this address")
			}
		}
		c, p := a.reviewToken(ctx, token)
		if p == nil {
			a.caches.storeToken(key, c, a.TTL, a.NegativeTTL)
		}
		return c, p
	})
	if p != nil {
		return nil, p
	}
	if c == nil {
		return nil, errNotAuthenticated
	}
	return c, nil
}

// reviewToken asks the API server who the token is, in one review: for audience parley when
// the token says it is for parley, else for the API server's own audiences (a nil caller: not
// authenticated).
func (a *Authorizer) reviewToken(ctx context.Context, token string) (*caller, *wire.Problem) {
	audiences := reviewAudiences(token)
	tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: audiences}}
	if p := a.create(ctx, tr, "token"); p != nil {
		return nil, p
	}
	// An API server that does not check audiences answers without them: refused, as the
	// TokenReview API asks of whoever sets spec.audiences.
	if !tr.Status.Authenticated || (len(audiences) > 0 && !slices.Contains(tr.Status.Audiences, wire.Audience)) {
		return nil, nil
	}
	return callerOf(tr.Status.User), nil
}

// callerOf is the caller a user is, however it was authenticated (a reviewed token, or the
// API server's front-proxy headers): a ServiceAccount token bound to a pod is bound to that
// pod on either path.
func callerOf(user authnv1.UserInfo) *caller {
	c := &caller{user: user}
	if names := user.Extra[extraPodName]; len(names) == 1 {
		c.podKey = namespaceOf(user.Username) + "/" + names[0]
		if uids := user.Extra[extraPodUID]; len(uids) == 1 {
			c.podUID = uids[0]
		}
	}
	return c
}

// authorize checks RBAC on conversations/history and the pod binding, or returns a 403.
func (a *Authorizer) authorize(ctx context.Context, c *caller, conv *parleyv1alpha1.Conversation, access Access) *wire.Problem {
	if p := checkPodBinding(c, conv); p != nil {
		return p
	}
	attrs := authzv1.ResourceAttributes{
		Namespace: conv.Namespace, Verb: string(access), Group: parleyv1alpha1.GroupVersion.Group,
		Resource: "conversations", Subresource: HistorySubresource,
	}
	// A review without a name asks about every conversation of the namespace ("" means all to
	// the authorizer; RBAC allows it only by a rule without resourceNames). When it is allowed,
	// one cached answer serves all of the namespace's conversations: a namespace with many busy
	// agents under one ServiceAccount costs the API server one review per TTL, not one per
	// conversation. Only when it is denied is this conversation itself asked about.
	p := a.authorizeResource(ctx, c, &attrs)
	if p != nil && p.Status == 403 {
		attrs.Name = conv.Name
		p = a.authorizeResource(ctx, c, &attrs)
	}
	if p != nil && p.Status == 403 {
		return forbidden(c, conv, access)
	}
	return p
}

// authorizeResource asks the API server (SubjectAccessReview) whether the caller may act on a
// resource, caching the answer for TTL under the caller's whole user info.
func (a *Authorizer) authorizeResource(ctx context.Context, c *caller, attrs *authzv1.ResourceAttributes) *wire.Problem {
	a.setup()
	key := accessKey(c.user, attrs)
	denied := problem(403, wire.ProblemForbidden, "Forbidden", fmt.Sprintf("%s may not %s %s.%s %s in namespace %s",
		c.user.Username, attrs.Verb, attrs.Resource, attrs.Group, attrs.Subresource, attrs.Namespace))
	if ok, hit := a.caches.access(key); hit {
		if !ok {
			return denied
		}
		return nil
	}
	allowed, p := review(a, "access\x00"+key, func() (bool, *wire.Problem) {
		if ok, hit := a.caches.access(key); hit {
			return ok, nil
		}
		if d := a.identities.take(c.identity()); d > 0 {
			return false, problem(429, wire.ProblemOverloaded, "Too Many Requests", "this identity causes too many access reviews")
		}
		extra := map[string]authzv1.ExtraValue{}
		for k, v := range c.user.Extra {
			extra[k] = authzv1.ExtraValue(v)
		}
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: c.user.Username, UID: c.user.UID, Groups: c.user.Groups, Extra: extra, ResourceAttributes: attrs,
		}}
		if p := a.create(ctx, sar, "access"); p != nil {
			return false, p
		}
		a.caches.storeAccess(key, sar.Status.Allowed, a.TTL)
		return sar.Status.Allowed, nil
	})
	if p != nil {
		return p
	}
	if !allowed {
		return denied
	}
	return nil
}

func forbidden(c *caller, conv *parleyv1alpha1.Conversation, access Access) *wire.Problem {
	return problem(403, wire.ProblemForbidden, "Forbidden", fmt.Sprintf(
		"%s may not %s conversations/history of %s/%s (grant it with a Role on parley.dev conversations/history)",
		c.user.Username, access, conv.Namespace, conv.Name))
}

// namespaceOf reads the namespace of a ServiceAccount username system:serviceaccount:NS:NAME.
func namespaceOf(username string) string {
	const prefix = "system:serviceaccount:"
	if len(username) <= len(prefix) || username[:len(prefix)] != prefix {
		return ""
	}
	rest := username[len(prefix):]
	for i := 0; i < len(rest); i++ {
		if rest[i] == ':' {
			return rest[:i]
		}
	}
	return ""
}

func (a *Authorizer) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}
