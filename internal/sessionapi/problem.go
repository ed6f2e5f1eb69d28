package sessionapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/wire"
)

func problem(status int, typ, title, detail string) *wire.Problem {
	return &wire.Problem{Type: typ, Title: title, Status: status, Detail: detail}
}

// writeProblem answers with an application/problem+json body; 429 and 503 carry Retry-After.
func writeProblem(w http.ResponseWriter, p *wire.Problem, retryAfter time.Duration) {
	if p.Status == http.StatusTooManyRequests || p.Status == http.StatusServiceUnavailable {
		if retryAfter <= 0 {
			retryAfter = time.Second
		}
		w.Header().Set("Retry-After", strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)))
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="parley"`)
	}
	w.Header().Set("Content-Type", wire.ProblemContentType)
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// storeProblem maps a history error to its answer. Details never carry message content.
func storeProblem(err error) *wire.Problem {
	switch {
	case errors.Is(err, history.ErrTooLarge):
		return problem(413, wire.ProblemTooLarge, "Content Too Large", "the history's size limit was reached: "+historystore.Message(err))
	case errors.Is(err, history.ErrInvalidRecord):
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", historystore.Message(err))
	case errors.Is(err, history.ErrConflict):
		return problem(409, wire.ProblemConflict, "Conflict", "the history changed concurrently; retry with the same ids")
	case errors.Is(err, history.ErrNotFound):
		return problem(404, wire.ProblemNotFound, "Not Found", "the conversation has no history")
	case errors.Is(err, history.ErrCorrupt):
		// Not 503: no retry mends stored bytes, and each would read them again.
		return problem(500, wire.ProblemHistoryCorrupt, "History Corrupt",
			"the stored history failed verification; see the Conversation's HistoryAvailable condition")
	case errors.Is(err, history.ErrBusy):
		return problem(503, wire.ProblemOverloaded, "Service Unavailable",
			"this replica is decoding as much stored history as its memory allows; retry with the same ids")
	default:
		return problem(503, wire.ProblemUnavailable, "Service Unavailable",
			"the history store is unavailable ("+historystore.Reason(err)+"); retry with the same ids")
	}
}

// checkpointRefused is the answer when the API server refused (403) a Checkpoint the manager
// creates for the caller, at a full ResourceQuota on count/checkpoints.parley.dev or under an
// admission policy; nil for any other error. 409: the namespace's state stands against the
// request until someone makes room. Not 403, which here says the caller lacks a right, nor
// 429 or 503, which clients retry by themselves although waiting frees no room. The detail
// quotes the API server (err as the client returned it), which names the quota and its counts.
func checkpointRefused(name string, err error) *wire.Problem {
	if !apierrors.IsForbidden(err) {
		return nil
	}
	why := err.Error()
	what := "the Checkpoint"
	if name != "" {
		what += " " + name
	}
	return problem(409, wire.ProblemConflict, "Conflict", fmt.Sprintf("the API server refused %s: %s", what, why))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
