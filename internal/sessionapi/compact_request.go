package sessionapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/wire"
)

// A forced compaction is asked for by writing parley.dev/compact-requested-at, which the
// controller watches. The interval since the last request is checked against the Conversation
// as read, usually from this replica's cache, which may be behind: another replica (or this
// one, a moment ago) may have recorded a request the cache has not seen yet. So the request is
// written only over the version checked (resourceVersion as a precondition); when the
// Conversation changed since, it is read again from the API server and the interval checked
// again. Two requests at once, on any replicas, make one compaction request.

// compactRequestAttempts bounds the reads and writes of one request while the Conversation
// keeps changing under it (its status is written too).
const compactRequestAttempts = 4

// requestCompaction asks the controller for a compaction through the annotation it watches.
func (s *Server) requestCompaction(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	if p := historyReady(req.conv, false); p != nil {
		return p
	}
	now := time.Now().UTC()
	conv := req.conv
	for range compactRequestAttempts {
		if next := nextForcedCompaction(conv, s.minCompactionInterval()); now.Before(next) {
			writeProblem(w, problem(429, wire.ProblemOverloaded, "Too Many Requests", fmt.Sprintf(
				"a compaction was asked for or run less than %s ago; ask again after %s", s.minCompactionInterval(), next.UTC().Format(time.RFC3339))),
				next.Sub(now))
			return nil
		}
		err := s.Writer.Patch(r.Context(), conv, compactRequestPatch(conv, now))
		switch {
		case err == nil:
			writeJSON(w, http.StatusAccepted, wire.CompactResponse{RequestedAt: now})
			return nil
		case !apierrors.IsConflict(err):
			return problem(503, wire.ProblemUnavailable, "Service Unavailable", "recording the compaction request failed")
		}
		if conv, err = s.readFresh(r.Context(), client.ObjectKeyFromObject(conv)); err != nil {
			return problem(503, wire.ProblemUnavailable, "Service Unavailable", "reading the conversation failed")
		}
	}
	return problem(503, wire.ProblemUnavailable, "Service Unavailable", "the conversation kept changing while the compaction request was recorded; retry")
}

// compactRequestPatch records a compaction request at now over conv's version only.
func compactRequestPatch(conv *parleyv1alpha1.Conversation, now time.Time) client.Patch {
	return client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q,"annotations":{%q:%q}}}`,
		conv.ResourceVersion, parleyv1alpha1.AnnotationCompactRequestedAt, now.Format(time.RFC3339)))
}

// readFresh reads a Conversation from the API server, not from the cache.
func (s *Server) readFresh(ctx context.Context, key types.NamespacedName) (*parleyv1alpha1.Conversation, error) {
	reader := s.APIReader
	if reader == nil {
		reader = s.Writer
	}
	conv := &parleyv1alpha1.Conversation{}
	return conv, reader.Get(ctx, key, conv)
}
