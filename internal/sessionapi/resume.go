package sessionapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/parley-dev/parley/internal/bundle"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/wire"
)

// getResume answers with the resume bundle a new agent pod would have mounted now: built by
// bundle.InputFor, as the controller builds it, from the history cut at ?turn (default: the
// latest complete turn). The attempt is the next pod's.
func (s *Server) getResume(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	turn := 0
	if v := r.URL.Query().Get("turn"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return problem(http.StatusBadRequest, wire.ProblemMalformed, "Bad Request", "turn must be a non-negative integer")
		}
		turn = n
	}
	attempt := int32(0)
	if a := req.conv.Status.Agent; a != nil {
		attempt = a.Attempt
	}
	route := routeName(http.MethodGet, "/resume")
	return s.answerWhole(w, r, req, route, route+"?turn="+strconv.Itoa(turn), func(v *journal.View) (any, *wire.Problem) {
		state, cut, err := journal.Cut(&v.State, turn)
		if errors.Is(err, journal.ErrTurnNotFound) {
			return nil, problem(http.StatusUnprocessableEntity, wire.ProblemInvalid, "Unprocessable Entity", err.Error())
		}
		if err != nil {
			return nil, storeProblem(err)
		}
		files, err := bundle.Build(bundle.InputFor(req.conv, &state, attempt, ""))
		if err != nil {
			return nil, problem(http.StatusUnprocessableEntity, wire.ProblemInvalid, "Unprocessable Entity",
				fmt.Sprintf("no bundle can be built for this conversation: %v", err))
		}
		out := wire.ResumeBundle{SessionID: req.conv.Status.SessionID, Turn: cut, Attempt: attempt, Files: map[string]string{}}
		for _, p := range files.Paths() {
			out.Files[p] = string(files[p])
		}
		return out, nil
	})
}
