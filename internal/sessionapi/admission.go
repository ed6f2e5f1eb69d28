package sessionapi

import (
	"context"
	"net"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/parley-dev/parley/pkg/wire"
)

// identity is whom the per-identity limits count: the token's user, and for a token bound to
// a pod that pod (agents of one ServiceAccount are limited one by one).
func (c *caller) identity() string {
	return c.user.UID + "|" + c.user.Username + "|" + c.podUID
}

// sourceAddress is the request's peer address without its port. Forwarding headers are not
// read: anyone could set them.
func sourceAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// bodyCharge is what a request's body counts against the bytes in flight: its
// Content-Length, or the body limit when it announces none (chunked), never more than the
// limit (decode reads no further).
func bodyCharge(r *http.Request, limit int64) int64 {
	switch {
	case r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody:
		return 0
	case r.ContentLength < 0:
		return limit
	default:
		return min(r.ContentLength, limit)
	}
}

// admitRequest takes the request's place among the requests and body bytes in flight, or
// says which bound it would pass: the identity's own (429) or the replica's (503).
func (s *Server) admitRequest(r *http.Request, id string) (release func(), p *wire.Problem) {
	if p := refused(s.requests.acquire(id, 1), "requests"); p != nil {
		return nil, p
	}
	n := bodyCharge(r, s.lim.MaxBodyBytes)
	if p := refused(s.bodies.acquire(id, n), "request body bytes"); p != nil {
		s.requests.release(id, 1)
		return nil, p
	}
	return func() {
		s.bodies.release(id, n)
		s.requests.release(id, 1)
	}, nil
}

// admitStream takes a follow stream's place among the identity's and the conversation's
// open streams. The conversation's own agent pod (a token bound to it: the binding was
// checked) takes no place among the conversation's: readers who hold every one of them cannot
// cut the agent off from its conversation. Its identity's bound still holds it.
func (s *Server) admitStream(c *caller, key types.NamespacedName) (release func(), p *wire.Problem) {
	id := c.identity()
	if s.identityStreams.acquire(id, 1) != admitted {
		return nil, problem(429, wire.ProblemOverloaded, "Too Many Requests", "this identity has too many follow streams open")
	}
	if c.podKey != "" {
		return func() { s.identityStreams.release(id, 1) }, nil
	}
	if s.conversationStreams.acquire(key.String(), 1) != admitted {
		s.identityStreams.release(id, 1)
		return nil, problem(429, wire.ProblemOverloaded, "Too Many Requests", "this conversation has too many follow streams open")
	}
	return func() {
		s.conversationStreams.release(key.String(), 1)
		s.identityStreams.release(id, 1)
	}, nil
}

func refused(r refusal, what string) *wire.Problem {
	switch r {
	case overKey:
		return problem(429, wire.ProblemOverloaded, "Too Many Requests", "this identity has too many "+what+" in flight")
	case overTotal:
		return problem(503, wire.ProblemUnavailable, "Service Unavailable", "this replica has too many "+what+" in flight")
	}
	return nil
}

// reauthorizing returns r with a context that ends when the caller, checked again every
// FollowReauthorize, no longer may read the conversation: its token is refused (revoked,
// expired, its pod gone), its access was withdrawn, or it is no longer the conversation's
// agent pod. The checks go through the review caches, so an answer is at most their TTL
// old. stop ends the checking.
func (s *Server) reauthorizing(r *http.Request, again reauthenticate, key types.NamespacedName, access Access) (_ *http.Request, stop func()) {
	every := s.lim.FollowReauthorize
	if every <= 0 {
		return r, func() {}
	}
	ctx, cancel := context.WithCancel(r.Context())
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if p := s.recheck(ctx, again, key, access); p != nil {
				if ctx.Err() == nil {
					logf.FromContext(ctx).V(1).Info("follow stream ended: the caller was refused", "conversation", key.String(), "status", p.Status)
				}
				cancel()
				return
			}
		}
	}()
	return r.WithContext(ctx), cancel
}

// recheck authenticates and authorises a running stream's caller again (its source address
// is not charged: the stream was let in).
func (s *Server) recheck(ctx context.Context, again reauthenticate, key types.NamespacedName, access Access) *wire.Problem {
	c, p := again(ctx)
	if p != nil {
		return p
	}
	_, p = s.conversation(ctx, c, key, access)
	return p
}
