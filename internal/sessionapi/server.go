// Package sessionapi is the HTTP API through which agents and people read and append to
// conversations. It runs on every manager replica (every write is a compare-and-swap at the
// store, so replicas never both win), authenticates every call with TokenReview, authorises it
// with SubjectAccessReview on conversations/history plus the agent pod binding, bounds what a
// request may cost, and answers errors as application/problem+json.
package sessionapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/pkg/wire"
)

// The Session API authenticates bearer tokens (TokenReview) and authorises callers
// (SubjectAccessReview): cluster-scoped, so they stay in the manager's ClusterRole
// manager-cluster-role whatever namespaces it watches. It reads Conversations through the
// manager's cache.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create,roleName=manager-cluster-role
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create,roleName=manager-cluster-role
// +kubebuilder:rbac:groups=parley.dev,resources=conversations,verbs=get;list;watch

// Server serves the Session API.
type Server struct {
	// Addr is the listen address, e.g. ":8082".
	Addr string
	// Reader reads Conversations (the manager's cache); Writer creates Checkpoints and records
	// compaction requests (the manager's client).
	Reader client.Reader
	Writer client.Client
	// APIReader reads a Conversation from the API server where the cache may be behind (a
	// compaction request's check); Writer when nil.
	APIReader client.Reader
	// Sessions opens the conversations' live histories; its Activity (nil: none) batches the
	// lastActivityTime writes of the appends served here.
	Sessions *session.Sessions
	Auth     *Authorizer
	// FrontProxy authenticates the aggregated group's requests, which the API server proxies
	// (nil: every one of them is refused).
	FrontProxy *FrontProxy
	Limits     Limits
	// ResetWait bounds how long a reset waits for its Checkpoint (DefaultResetWait when zero).
	ResetWait time.Duration
	// MinCompactionInterval is the least time between two forced compactions of one
	// conversation (DefaultMinCompactionInterval when zero): sooner, POST …/compact is 429.
	MinCompactionInterval time.Duration
	// TLS, when set, serves HTTPS with it; plain HTTP otherwise (local runs only).
	TLS TLSSetup
	// AccessLog receives one line per request (who, which conversation, what, the answer; no
	// content); the zero Logger writes none.
	AccessLog logr.Logger
	now       func() time.Time

	init sync.Once
	lim  Limits
	// The limits' state: request rates per conversation and per identity, requests and body
	// bytes in flight, answer bytes being written, open follow streams per identity and per conversation.
	conversations, identities *keyedLimiter
	requests, bodies, answers *budget
	identityStreams           *budget
	conversationStreams       *budget
	// historyBytes charges whole-history answers to identities and namespaces; answerCache
	// keeps them.
	historyBytes historyBuckets
	answerCache  *answerCache
}

func (s *Server) setup() {
	s.init.Do(func() {
		s.lim = s.Limits.withDefaults()
		s.conversations = newKeyedLimiter(s.lim.PerConversation, maxLimiterKeys, clockFunc(s.clock))
		s.identities = newKeyedLimiter(s.lim.PerIdentity, maxLimiterKeys, clockFunc(s.clock))
		s.historyBytes = historyBuckets{
			identity:  newKeyedLimiter(s.lim.HistoryBytesPerIdentity, maxLimiterKeys, clockFunc(s.clock)),
			namespace: newKeyedLimiter(s.lim.HistoryBytesPerNamespace, maxLimiterKeys, clockFunc(s.clock)),
		}
		s.answerCache = newAnswerCache(s.lim.AnswerCacheBytes)
		s.requests = newBudget(int64(s.lim.InFlight), int64(s.lim.InFlightPerIdentity))
		s.bodies = newBudget(s.lim.BodyBytesInFlight, s.lim.BodyBytesInFlightPerIdentity)
		s.answers = newBudget(s.lim.AnswerBytesInFlight, s.lim.AnswerBytesInFlightPerIdentity)
		s.identityStreams = newBudget(0, int64(s.lim.FollowsPerIdentity))
		s.conversationStreams = newBudget(0, int64(s.lim.FollowsPerConversation))
	})
}

func (s *Server) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// NeedLeaderElection is false: every replica serves the API.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	logf.FromContext(ctx).Info("session API listening", "address", ln.Addr().String(), "tls", s.TLS != nil)
	if s.TLS != nil {
		if err := s.TLS(ctx, srv); err != nil {
			return err
		}
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Handler routes the API, counting and timing every request by route: the same endpoints
// under /v1 (a bearer token: agents, direct clients) and under the aggregated group's path
// (the user the API server authenticated, for kubectl and people), plus the aggregated
// group's discovery.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, api := range []struct {
		prefix string
		authn  authentication
	}{{wire.APIPath, s.bearerAuthentication}, {wire.AggregatedPath, s.frontProxyAuthentication}} {
		s.routeConversations(mux, api.prefix+conversationPath, api.authn)
	}
	// Through the aggregator a follow rides on the log subresource, which the API server
	// treats as long-running (as pods/log): no request timeout, no priority-and-fairness seat
	// held while it streams.
	mux.Handle("GET "+wire.AggregatedPath+conversationPath+"/log",
		instrumented(routeName("GET", "/messages")+" (follow)", s.serveStream(AccessRead, s.follow, s.frontProxyAuthentication)))
	s.routeDiscovery(mux)
	mux.Handle("/", instrumented("other", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, problem(404, wire.ProblemNotFound, "Not Found", "no such endpoint: "+r.Method+" "+r.URL.Path), 0)
	})))
	return accessLogged(s.AccessLog, s.clock, mux)
}

// routeConversations routes a conversation's endpoints under base, authenticated by authn.
func (s *Server) routeConversations(mux *http.ServeMux, base string, authn authentication) {
	route := func(method, endpoint string, access Access, h handler) {
		mux.Handle(method+" "+base+endpoint, instrumented(routeName(method, endpoint), s.serve(access, h, authn)))
	}
	route("GET", "", AccessRead, s.getConversation)
	route("POST", "/messages", AccessWrite, s.appendMessages)
	route("POST", "/events", AccessWrite, s.appendEvents)
	route("PUT", "/adapter-state", AccessWrite, s.putAdapterState)
	route("POST", "/checkpoints", AccessWrite, s.createCheckpoint)
	route("POST", "/compact", AccessWrite, s.requestCompaction)
	route("POST", "/reset", AccessReset, s.resetHistory)
	route("GET", "/resume", AccessRead, s.getResume)
	route("GET", "/state", AccessRead, s.getState)
	route("POST", "/import", AccessWrite, s.appendImport)
	route("POST", "/transcript", AccessWrite, s.appendTranscript)
	route("GET", "/transcript", AccessRead, s.getTranscript)
	route("GET", "/transcripts", AccessRead, s.listTranscripts)
	// A follow is a stream, timed apart from page reads.
	pages := instrumented(routeName("GET", "/messages"), s.serve(AccessRead, s.getMessages, authn))
	streams := instrumented(routeName("GET", "/messages")+" (follow)", s.serveStream(AccessRead, s.getMessages, authn))
	mux.Handle("GET "+base+"/messages", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("follow") == "true" {
			streams.ServeHTTP(w, r)
			return
		}
		pages.ServeHTTP(w, r)
	}))
}

// conversationPath is the path of a conversation under an API's prefix; its endpoints follow it.
const conversationPath = "/namespaces/{namespace}/conversations/{name}"

// routeName is a route's label on the request metrics: "GET conversation", "POST messages".
func routeName(method, endpoint string) string {
	if endpoint == "" {
		return method + " conversation"
	}
	return method + " " + strings.TrimPrefix(endpoint, "/")
}

// instrumented counts and times h's requests under route (promhttp keeps the writer's
// Flusher, which a follow needs).
func instrumented(route string, h http.Handler) http.Handler {
	labels := prometheus.Labels{"route": route}
	return promhttp.InstrumentHandlerDuration(metrics.SessionAPIDuration.MustCurryWith(labels),
		promhttp.InstrumentHandlerCounter(metrics.SessionAPIRequests.MustCurryWith(labels), h))
}

// request is an authorised request for one conversation.
type request struct {
	conv   *parleyv1alpha1.Conversation
	caller *caller
	// retryAfter is when a handler's 429 or 503 may be retried (zero: in a second).
	retryAfter time.Duration
}

type handler func(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem

// serve runs a request's checks, then h.
func (s *Server) serve(access Access, h handler, authn authentication) http.HandlerFunc {
	return s.checked(access, h, authn, false)
}

// serveStream runs a follow stream's checks, then h, and checks the caller again while the
// stream runs.
func (s *Server) serveStream(access Access, h handler, authn authentication) http.HandlerFunc {
	return s.checked(access, h, authn, true)
}

// authentication is how a request proves who it is: it returns the caller, and how a running
// stream authenticates the caller again.
type authentication func(r *http.Request) (*caller, reauthenticate, *wire.Problem)

type reauthenticate func(ctx context.Context) (*caller, *wire.Problem)

// bearerAuthentication reviews the request's bearer token (a token this replica does not know
// costs a review that its source address must afford); a stream's token is reviewed again.
func (s *Server) bearerAuthentication(r *http.Request) (*caller, reauthenticate, *wire.Problem) {
	token := bearerToken(r)
	c, p := s.Auth.authenticate(r.Context(), token, sourceAddress(r))
	again := func(ctx context.Context) (*caller, *wire.Problem) { return s.Auth.authenticate(ctx, token, "") }
	return c, again, p
}

// frontProxyAuthentication believes the user the API server authenticated, once its
// front-proxy client certificate verified. The user's credential never reaches this replica,
// so a stream cannot authenticate it again: the API server did at the stream's start, and
// the stream's access is still authorised again while it runs.
func (s *Server) frontProxyAuthentication(r *http.Request) (*caller, reauthenticate, *wire.Problem) {
	c, p := s.FrontProxy.authenticate(r)
	return c, func(context.Context) (*caller, *wire.Problem) { return c, nil }, p
}

// checked runs the checks of every request, each before the work it protects: authentication
// (a token this replica does not know costs a review that its source address must afford),
// the identity's rate, its share of the requests and body bytes in flight (follow streams are
// counted apart, after authorisation), the conversation and the caller's access to it, and
// the conversation's rate. Problems found before the conversation is known never say whether
// it exists.
func (s *Server) checked(access Access, h handler, authn authentication, stream bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.setup()
		ctx := r.Context()
		c, again, p := authn(r)
		if p != nil {
			writeProblem(w, p, 0)
			return
		}
		key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
		entryOf(r).identify(c, key)
		id := c.identity()
		if d := s.identities.take(id); d > 0 {
			writeProblem(w, problem(429, wire.ProblemOverloaded, "Too Many Requests", "this identity sends too many requests"), d)
			return
		}
		if !stream {
			release, p := s.admitRequest(r, id)
			if p != nil {
				writeProblem(w, p, 0)
				return
			}
			defer release()
		}
		conv, p := s.conversation(ctx, c, key, access)
		if p != nil {
			writeProblem(w, p, 0)
			return
		}
		if d := s.conversations.take("conv:" + key.String()); d > 0 {
			writeProblem(w, problem(429, wire.ProblemOverloaded, "Too Many Requests", "this conversation receives too many requests"), d)
			return
		}
		if stream {
			release, p := s.admitStream(c, key)
			if p != nil {
				writeProblem(w, p, 0)
				return
			}
			defer release()
			var stop func()
			r, stop = s.reauthorizing(r, again, key, access)
			defer stop()
		}
		req := &request{conv: conv, caller: c}
		if p := h(w, r, req); p != nil {
			writeProblem(w, p, max(req.retryAfter, time.Second))
		}
	}
}

// conversation reads the conversation and authorises the caller's access to it. A caller
// without access learns nothing of whether it exists.
func (s *Server) conversation(ctx context.Context, c *caller, key types.NamespacedName, access Access) (*parleyv1alpha1.Conversation, *wire.Problem) {
	conv := &parleyv1alpha1.Conversation{}
	if err := s.Reader.Get(ctx, key, conv); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return nil, problem(503, wire.ProblemUnavailable, "Service Unavailable", "reading the conversation failed")
		}
		// Authorise against the name anyway, so a caller without access cannot probe.
		conv.Namespace, conv.Name = key.Namespace, key.Name
		if p := s.Auth.authorize(ctx, c, conv, access); p != nil {
			return nil, p
		}
		return nil, problem(404, wire.ProblemNotFound, "Not Found", "conversation "+key.String()+" does not exist")
	}
	if p := s.Auth.authorize(ctx, c, conv, access); p != nil {
		return nil, p
	}
	return conv, nil
}

// bearerToken is the request's bearer token, from Authorization.
func bearerToken(r *http.Request) string {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(token)
}

func (s *Server) limits() Limits {
	s.setup()
	return s.lim
}

// historyReady reports whether a conversation's history can be used, or why not. An expired
// session stays readable while its history is retained, and takes no more writes.
func historyReady(conv *parleyv1alpha1.Conversation, read bool) *wire.Problem {
	if !read && meta.IsStatusConditionTrue(conv.Status.Conditions, parleyv1alpha1.ConditionExpired) {
		return problem(409, wire.ProblemConflict, "Conflict", "the session expired; it accepts no more messages")
	}
	c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
	switch {
	case c != nil && c.Status == metav1.ConditionTrue:
		return nil
	case c != nil && (c.Reason == parleyv1alpha1.ReasonHistoryDeleted || c.Reason == parleyv1alpha1.ReasonHistoryArchived):
		return problem(404, wire.ProblemNotFound, "Not Found", "the session expired and its live history was removed ("+c.Reason+")")
	case c != nil && c.Reason == parleyv1alpha1.ReasonHistoryCorrupt:
		return problem(500, wire.ProblemHistoryCorrupt, "History Corrupt", "the stored history failed verification: "+c.Message)
	case c != nil:
		return problem(503, wire.ProblemNotReady, "Service Unavailable", "the conversation's history is not available ("+c.Reason+"): "+c.Message)
	default:
		return problem(503, wire.ProblemNotReady, "Service Unavailable", "the conversation's history is being set up")
	}
}
