package sessionapi

import (
	"net/http"

	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/wire"
)

// getState answers with the whole state of the current epoch: the system prompt, the messages,
// the subagent threads, the adapter reports and the transcript records kept to be written back.
// A transcript rendering or a lossless export needs all of it; GET …/messages has only messages.
func (s *Server) getState(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	route := routeName(http.MethodGet, "/state")
	return s.answerWhole(w, r, req, route, route, func(v *journal.View) (any, *wire.Problem) {
		return wire.StateResponse{Epoch: v.Epoch, Sequence: v.Sequence, Tokens: v.Tokens(), State: v.State}, nil
	})
}
