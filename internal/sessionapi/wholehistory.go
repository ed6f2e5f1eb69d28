package sessionapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"k8s.io/apimachinery/pkg/types"

	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/pkg/wire"
)

// Whole-history answers. GET of a conversation, its state, its resume bundle and its
// transcripts are built from the whole history under the view, and written whole: their CPU
// (encoding, then encryption) is proportional to the history (megabytes), where an append's
// is bounded. The request rates alone would let one token keep a replica's cores busy by
// asking again and again, so:
//
//   - Each such answer is charged the view's history bytes to the caller's identity
//     (Limits.HistoryBytesPerIdentity) and to the conversation's namespace (Limits.
//     HistoryBytesPerNamespace), before anything is built or written: past either rate the
//     answer is 429 with the Retry-After of the slower bucket. Varying the parameters (another
//     ?turn each time) changes nothing to the charge. A transcript is read in pages: its
//     rendering is what costs the history (an export of what the epoch held before the
//     agent's first line), so the rendering is charged and kept, and its pages are cut from
//     it, each as cheap as a page of messages (transcript.go).
//   - An answer is kept, encoded, in a per-replica cache bounded in bytes (Limits.
//     AnswerCacheBytes), under the key of everything it is built from (answerKey). The view
//     is held by one request at a time and the cache is read under it: identical requests
//     that arrive together wait for the view and find the first one's answer, so N clients
//     asking at once (an agent's and people's, each within its own rate) cause one build.
//
// See docs/session-api.md#whole-history-answers.

// answerKey is what determines a whole-history answer: the Conversation as read (its UID
// and resourceVersion cover everything of it an answer holds: phase, expiry, session id, the
// agent's attempt, the spec a resume bundle is built from), the history the view stands at
// (epoch and sequence), and the route with its parameters.
type answerKey struct {
	uid             types.UID
	resourceVersion string
	epoch, sequence uint64
	route           string
}

// answerWhole answers 200 with what fn builds from the whole history, as answerFromView
// does, within the caller's history bytes per second, from the answer cache when the same
// answer was built before. route names the answer with its parameters
// ("GET resume?turn=3"); metric is the route's label on the metrics.
func (s *Server) answerWhole(w http.ResponseWriter, r *http.Request, req *request, metric, route string, fn func(v *journal.View) (any, *wire.Problem)) *wire.Problem {
	var body []byte
	p := s.withView(r, req, func(v *journal.View) *wire.Problem {
		if p := s.chargeWhole(req, v, metric); p != nil {
			return p
		}
		key := wholeKey(req, v, route)
		if cached, ok := s.answerCache.get(key); ok {
			metrics.SessionAPIWholeHistoryAnswers.WithLabelValues(metric, "cached").Inc()
			body = cached.([]byte)
			return nil
		}
		out, p := fn(v)
		if p != nil {
			return p
		}
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(out); err != nil {
			return problem(503, wire.ProblemUnavailable, "Service Unavailable", "the answer could not be encoded")
		}
		metrics.SessionAPIWholeHistoryAnswers.WithLabelValues(metric, "built").Inc()
		body = buf.Bytes()
		s.answerCache.put(key, body, int64(len(body)))
		return nil
	})
	if p != nil {
		return p
	}
	return s.writeAnswer(w, req, body)
}

// chargeWhole charges the view's history bytes to the caller's identity and the
// conversation's namespace (historybytes.go), or answers 429 with the time until both hold
// them again.
func (s *Server) chargeWhole(req *request, v *journal.View, metric string) *wire.Problem {
	p := s.takeHistoryBytes(req, int(v.HistoryBytes()))
	if p != nil {
		metrics.SessionAPIWholeHistoryAnswers.WithLabelValues(metric, "refused").Inc()
	}
	return p
}

// wholeKey is the answerKey of route's answer from v for req's Conversation.
func wholeKey(req *request, v *journal.View, route string) answerKey {
	return answerKey{uid: req.conv.UID, resourceVersion: req.conv.ResourceVersion, epoch: v.Epoch, sequence: v.Sequence, route: route}
}
