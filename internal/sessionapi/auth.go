package sessionapi

import (
	"context"
	"crypto/sha256"
	"fmt"
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

// Authorizer authenticates bearer tokens with TokenReview (audience parley) and authorises
// with SubjectAccessReview, caching both results briefly and boundedly. A token bound to a pod
// may only touch the conversation whose agent pod that is: agent A cannot reach conversation B
// even in the same namespace with the same ServiceAccount.
type Authorizer struct {
	// Client creates TokenReviews and SubjectAccessReviews (the manager's own client).
	Client client.Client
	// TTL bounds how long a review result is trusted; MaxEntries bounds each cache.
	TTL        time.Duration
	MaxEntries int
	now        func() time.Time

	mu     sync.Mutex
	tokens map[[32]byte]cached[*caller]
	access map[string]cached[bool]
	// reviews lets concurrent requests that miss the cache for the same token, or the same
	// access, share one review: a burst of calls asks the API server once, not once per call.
	reviews singleflight.Group
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

type cached[T any] struct {
	value T
	at    time.Time
}

// authenticate returns the token's identity, or a 401 problem.
func (a *Authorizer) authenticate(ctx context.Context, token string) (*caller, *wire.Problem) {
	if token == "" {
		return nil, problem(401, wire.ProblemUnauthorized, "Unauthorized",
			"send a bearer token: the pod's projected ServiceAccount token with audience parley, or your own")
	}
	key := sha256.Sum256([]byte(token))
	if c, ok := lookup(a, &a.tokens, key); ok {
		if c == nil {
			return nil, problem(401, wire.ProblemUnauthorized, "Unauthorized", "the token was not accepted")
		}
		return c, nil
	}
	c, p := review(a, "token\x00"+string(key[:]), func() (*caller, *wire.Problem) {
		// A caller that missed the cache just as the previous shared review filled it.
		if c, ok := lookup(a, &a.tokens, key); ok {
			return c, nil
		}
		c, p := a.reviewToken(ctx, token)
		if p == nil {
			store(a, &a.tokens, key, c)
		}
		return c, p
	})
	if p != nil {
		return nil, p
	}
	if c == nil {
		return nil, problem(401, wire.ProblemUnauthorized, "Unauthorized", "the token was not accepted (expired, revoked, or for neither audience parley nor the API server)")
	}
	return c, nil
}

// reviewToken asks the API server who the token is (audience parley, else the API server's
// own); a nil caller: not authenticated.
func (a *Authorizer) reviewToken(ctx context.Context, token string) (*caller, *wire.Problem) {
	tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{wire.Audience}}}
	if err := a.Client.Create(ctx, tr); err != nil {
		return nil, problem(503, wire.ProblemUnavailable, "Service Unavailable", "the API server could not review the token")
	}
	if !tr.Status.Authenticated {
		// A person's own token (a kubeconfig's, sent by kubectl parley) is for the API server's
		// audience. It gives the Session API nothing the API server would not grant that token:
		// RBAC on conversations/history and the pod binding still decide.
		tr = &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}
		if err := a.Client.Create(ctx, tr); err != nil {
			return nil, problem(503, wire.ProblemUnavailable, "Service Unavailable", "the API server could not review the token")
		}
	}
	var c *caller
	if tr.Status.Authenticated {
		c = &caller{user: tr.Status.User}
		if names := tr.Status.User.Extra[extraPodName]; len(names) == 1 {
			ns := namespaceOf(tr.Status.User.Username)
			c.podKey = ns + "/" + names[0]
			if uids := tr.Status.User.Extra[extraPodUID]; len(uids) == 1 {
				c.podUID = uids[0]
			}
		}
	}
	return c, nil
}

// authorize checks RBAC on conversations/history and the pod binding, or returns a 403.
func (a *Authorizer) authorize(ctx context.Context, c *caller, conv *parleyv1alpha1.Conversation, access Access) *wire.Problem {
	if c.podKey != "" {
		agent := ""
		if conv.Status.Agent != nil && conv.Status.Agent.PodName != "" {
			agent = conv.Namespace + "/" + conv.Status.Agent.PodName
		}
		if agent == "" || agent != c.podKey {
			return problem(403, wire.ProblemForbidden, "Forbidden",
				fmt.Sprintf("the token belongs to pod %s, which is not the agent pod of conversation %s/%s", c.podKey, conv.Namespace, conv.Name))
		}
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
// resource, caching the answer for TTL.
func (a *Authorizer) authorizeResource(ctx context.Context, c *caller, attrs *authzv1.ResourceAttributes) *wire.Problem {
	key := fmt.Sprintf("%s|%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", c.user.UID, c.user.Username,
		attrs.Namespace, attrs.Verb, attrs.Group, attrs.Resource, attrs.Subresource, attrs.Name)
	denied := problem(403, wire.ProblemForbidden, "Forbidden", fmt.Sprintf("%s may not %s %s.%s %s in namespace %s",
		c.user.Username, attrs.Verb, attrs.Resource, attrs.Group, attrs.Subresource, attrs.Namespace))
	if ok, hit := lookup(a, &a.access, key); hit {
		if !ok {
			return denied
		}
		return nil
	}
	allowed, p := review(a, "access\x00"+key, func() (bool, *wire.Problem) {
		if ok, hit := lookup(a, &a.access, key); hit {
			return ok, nil
		}
		extra := map[string]authzv1.ExtraValue{}
		for k, v := range c.user.Extra {
			extra[k] = authzv1.ExtraValue(v)
		}
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: c.user.Username, UID: c.user.UID, Groups: c.user.Groups, Extra: extra, ResourceAttributes: attrs,
		}}
		if err := a.Client.Create(ctx, sar); err != nil {
			return false, problem(503, wire.ProblemUnavailable, "Service Unavailable", "the API server could not review the access")
		}
		store(a, &a.access, key, sar.Status.Allowed)
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

// lookup reads a cache under the lock (store may replace the map itself).
func lookup[K comparable, V any](a *Authorizer, m *map[K]cached[V], key K) (V, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := (*m)[key]
	if !ok || a.clock().Sub(e.at) >= a.ttl() {
		var zero V
		return zero, false
	}
	return e.value, true
}

func store[K comparable, V any](a *Authorizer, m *map[K]cached[V], key K, v V) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if *m == nil {
		*m = map[K]cached[V]{}
	}
	limit := a.MaxEntries
	if limit <= 0 {
		limit = 10000
	}
	if len(*m) >= limit {
		// Bounded: drop expired entries, and everything if that is not enough.
		now := a.clock()
		for k, e := range *m {
			if now.Sub(e.at) >= a.ttl() {
				delete(*m, k)
			}
		}
		if len(*m) >= limit {
			clear(*m)
		}
	}
	(*m)[key] = cached[V]{value: v, at: a.clock()}
}

func (a *Authorizer) ttl() time.Duration {
	if a.TTL > 0 {
		return a.TTL
	}
	return 10 * time.Second
}

func (a *Authorizer) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}
