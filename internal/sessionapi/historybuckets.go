package sessionapi

import (
	"net/http"
	"time"

	"github.com/parley-dev/parley/pkg/wire"
)

// historyBuckets charges answers built from histories (wholehistory.go, and pages of messages)
// to two buckets of history bytes at once: the caller's identity's
// (Limits.HistoryBytesPerIdentity) and the conversation's namespace's
// (Limits.HistoryBytesPerNamespace). An identity is not a tenant: whoever may create pods or
// ServiceAccounts in a namespace runs as many identities as they like, and the namespace's
// bucket is what bounds them together. An answer is served only when both have room; a
// refusal by one takes nothing from the other.
type historyBuckets struct {
	identity, namespace *keyedLimiter
}

// historyRefusal says which buckets refused a charge and how long until both would admit it
// (zero wait: admitted).
type historyRefusal struct {
	wait                time.Duration
	identity, namespace bool
}

// take charges n bytes to both buckets at now, or to neither.
func (h historyBuckets) take(identity, namespace string, n int, now time.Time) historyRefusal {
	idWait, idUndo := h.identity.reserveN(identity, n, now)
	nsWait, nsUndo := h.namespace.reserveN(namespace, n, now)
	if idWait > 0 || nsWait > 0 {
		idUndo()
		nsUndo()
	}
	return refusalOf(idWait, nsWait)
}

// owed says whether either bucket is in debt, and until when: a caller charged after the
// fact (spend) is refused until both debts are paid.
func (h historyBuckets) owed(identity, namespace string) historyRefusal {
	return refusalOf(h.identity.owed(identity), h.namespace.owed(namespace))
}

// spend charges n bytes to both buckets after the fact, into debt where they hold fewer.
func (h historyBuckets) spend(identity, namespace string, n int) {
	h.identity.spend(identity, n)
	h.namespace.spend(namespace, n)
}

func refusalOf(idWait, nsWait time.Duration) historyRefusal {
	return historyRefusal{wait: max(idWait, nsWait, 0), identity: idWait > 0, namespace: nsWait > 0}
}

// problem is the 429 of a refused charge, naming the bounds that refused, to retry after the
// longer wait; nil when the charge was admitted.
func (r historyRefusal) problem(req *request) *wire.Problem {
	var whose string
	switch {
	case r.identity && r.namespace:
		whose = "this identity's and this namespace's answers from histories passed their"
	case r.identity:
		whose = "this identity's answers from histories passed its"
	case r.namespace:
		whose = "this namespace's answers from histories passed its"
	default:
		return nil
	}
	req.retryAfter = r.wait
	return problem(http.StatusTooManyRequests, wire.ProblemOverloaded, "Too Many Requests", whose+" history bytes per second")
}

// takeHistoryBytes charges n history bytes to req's identity and its conversation's
// namespace, or answers 429.
func (s *Server) takeHistoryBytes(req *request, n int) *wire.Problem {
	return s.historyBytes.take(req.caller.identity(), req.conv.Namespace, n, s.clock()).problem(req)
}

// historyBytesOwed answers 429 while req's identity or its conversation's namespace is in
// debt.
func (s *Server) historyBytesOwed(req *request) *wire.Problem {
	return s.historyBytes.owed(req.caller.identity(), req.conv.Namespace).problem(req)
}

// spendHistoryBytes charges n history bytes to req's identity and its conversation's
// namespace after the fact.
func (s *Server) spendHistoryBytes(req *request, n int) {
	s.historyBytes.spend(req.caller.identity(), req.conv.Namespace, n)
}
