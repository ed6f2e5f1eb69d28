package sessionapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/wire"
)

// withView opens the conversation's history and runs fn on its up-to-date view. fn holds the
// view, which the conversation's appends, reconcile and compaction wait for: it must never
// write to the client (see answerFromView).
func (s *Server) withView(r *http.Request, req *request, fn func(v *journal.View) *wire.Problem) *wire.Problem {
	if p := historyReady(req.conv, r.Method == http.MethodGet); p != nil {
		return p
	}
	live, err := s.Sessions.Open(r.Context(), req.conv, false)
	if err != nil {
		return storeProblem(err)
	}
	var p *wire.Problem
	err = live.With(r.Context(), func(v *journal.View) error {
		p = fn(v)
		return nil
	})
	if err != nil {
		return storeProblem(err)
	}
	return p
}

// answerFromView answers 200 with what fn makes of the view: encoded while the view is held
// (it may reference the view's own slices), written after it is released. A client that does
// not read its answer then holds only its own request, never the conversation: its appends,
// reconcile and compaction go on. The buffer is the size of the answer and lives as long as
// the write, so it is held only within the answer budgets (429 or 503 past them): clients
// that never read cannot pile up answers until the replica runs out of memory.
//
// With charged, its CPU is charged as a whole-history answer's is (wholehistory.go), by the
// bytes it encodes: a page of a thousand large messages costs what a whole history does. The
// size is known once the page is encoded, so it is charged then to both buckets, into debt if
// need be, and a caller whose identity or namespace is in debt is refused before anything
// more is built for it. Both happen under the view, which serves one request at a time: many
// requests for one conversation sent at once see each other's charges, so together they run
// no deeper into debt than one page. (A transcript's pages are not charged: its whole
// rendering was.)
func (s *Server) answerFromView(w http.ResponseWriter, r *http.Request, req *request, charged bool, fn func(v *journal.View) (any, *wire.Problem)) *wire.Problem {
	var body bytes.Buffer
	p := s.withView(r, req, func(v *journal.View) *wire.Problem {
		if charged {
			if p := s.historyBytesOwed(req); p != nil {
				return p
			}
			defer func() { s.spendHistoryBytes(req, body.Len()) }()
		}
		out, p := fn(v)
		if p != nil {
			return p
		}
		if err := json.NewEncoder(&body).Encode(out); err != nil {
			return problem(503, wire.ProblemUnavailable, "Service Unavailable", "the answer could not be encoded")
		}
		return nil
	})
	if p != nil {
		return p
	}
	return s.writeAnswer(w, req, body.Bytes())
}

// writeAnswer writes an encoded answer, 200, within the answer budgets: every write counts
// its answer's bytes while it lasts, even when it shares them with others (the answer cache).
func (s *Server) writeAnswer(w http.ResponseWriter, req *request, body []byte) *wire.Problem {
	id, n := req.caller.identity(), int64(len(body))
	if p := refused(s.answers.acquireAlone(id, n), "answer bytes"); p != nil {
		return p
	}
	defer s.answers.release(id, n)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

func (s *Server) getConversation(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	route := routeName(http.MethodGet, "")
	return s.answerWhole(w, r, req, route, route, func(v *journal.View) (any, *wire.Problem) {
		out := wire.Conversation{
			Namespace: req.conv.Namespace, Name: req.conv.Name, SessionID: req.conv.Status.SessionID,
			Phase: string(req.conv.Status.Phase), Epoch: v.Epoch, Sequence: v.Sequence,
			Messages: v.Messages(), Turns: v.Turns, Tokens: v.Tokens(),
		}
		if m := req.conv.Spec.Context.MaxTokens; m != nil {
			out.Limit = *m
		}
		if e := req.conv.Status.ExpiresAt; e != nil {
			t := e.UTC()
			out.ExpiresAt = &t
		}
		return out, nil
	})
}

func (s *Server) getMessages(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	q := r.URL.Query()
	if q.Get("follow") == "true" {
		return s.follow(w, r, req)
	}
	after, err := uintParam(q.Get("after"), 0)
	if err != nil {
		return problem(400, wire.ProblemMalformed, "Bad Request", "after must be a sequence number: "+err.Error())
	}
	limit, err := uintParam(q.Get("limit"), uint64(s.limits().MaxPage))
	if err != nil || limit == 0 {
		return problem(400, wire.ProblemMalformed, "Bad Request", "limit must be a positive number")
	}
	limit = min(limit, uint64(s.limits().MaxPage))
	return s.answerFromView(w, r, req, true, func(v *journal.View) (any, *wire.Problem) {
		msgs := v.State.Messages
		start := sort.Search(len(msgs), func(i int) bool { return uint64(msgs[i].Seq) > after })
		end := min(len(msgs), start+int(limit))
		page := wire.MessagesPage{Epoch: v.Epoch, Messages: msgs[start:end]}
		if page.Messages == nil {
			page.Messages = []conversation.Message{} // an empty page is [], never null: clients iterate it
		}
		if end < len(msgs) {
			page.Next = uint64(msgs[end-1].Seq)
		}
		return page, nil
	})
}

func uintParam(s string, def uint64) (uint64, error) {
	if s == "" {
		return def, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// appendMessages stores a batch: validated as a whole first (nothing is half-applied by a bad
// message), refused with 409 when an id is already stored with other content, and answered
// only after the store acknowledged every record. A retry with the same ids stores nothing twice.
//
// The conflict check runs inside the store's commit (journal.SameMessage), so it cannot be
// overtaken by another replica's append, and an append costs no read of the history: one
// request to the store when the batch fits the index's open tail.
func (s *Server) appendMessages(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	var body wire.AppendRequest
	if p := s.decode(w, r, &body); p != nil {
		return p
	}
	switch n := len(body.Messages); {
	case n == 0:
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", "messages is empty")
	case n > s.limits().MaxBatch:
		return problem(413, wire.ProblemTooLarge, "Content Too Large",
			fmt.Sprintf("%d messages in one append; at most %d", n, s.limits().MaxBatch))
	}
	// Validate and normalise the batch alone, as AppendMessage would append it.
	scratch := conversation.NewState("")
	for i, m := range body.Messages {
		if m.ID == "" {
			return problem(422, wire.ProblemInvalid, "Unprocessable Content", fmt.Sprintf("messages[%d] has no id", i))
		}
		m.Seq, m.Turn = 0, 0
		if _, err := scratch.AppendMessage(m); err != nil {
			return problem(422, wire.ProblemInvalid, "Unprocessable Content", fmt.Sprintf("messages[%d] (%s): %v", i, m.ID, err))
		}
	}
	msgs := scratch.Messages
	records := make([]history.Record, len(msgs))
	for i := range msgs {
		m := msgs[i]
		m.Seq, m.Turn = 0, 0
		rec, err := journal.MessageRecord(&m)
		if err != nil {
			return problem(422, wire.ProblemInvalid, "Unprocessable Content", err.Error())
		}
		records[i] = rec
	}
	if p := historyReady(req.conv, false); p != nil {
		return p
	}
	live, err := s.Sessions.Open(r.Context(), req.conv, false)
	if err != nil {
		return storeProblem(err)
	}
	// Folded into the shared view and handed to the reconcile with the head it left (see
	// package session, "The activity hand-off").
	res, err := live.AppendFolded(r.Context(), records, history.AppendOptions{Same: journal.SameMessage})
	if errors.Is(err, conversation.ErrConflict) {
		return problem(409, wire.ProblemConflict, "Conflict", err.Error())
	}
	if err != nil {
		return storeProblem(err)
	}
	if hasUserMessage(msgs) {
		// A person spoke: an agent asleep while idle is woken now, not at the next flush. The
		// answer does not wait for its pod: the message is durable already.
		live.Wake()
	}
	writeJSON(w, http.StatusOK, wire.AppendResponse{Epoch: res.Epoch, Sequences: res.Sequences})
	return nil
}

// decode reads a JSON body within the size limit: 413 past it, 400 when it is not JSON of the
// expected shape.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, into any) *wire.Problem {
	r.Body = http.MaxBytesReader(w, r.Body, s.limits().MaxBodyBytes)
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(into); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return problem(413, wire.ProblemTooLarge, "Content Too Large",
				fmt.Sprintf("the body exceeds %d bytes; send smaller batches", tooLarge.Limit))
		}
		return problem(400, wire.ProblemMalformed, "Bad Request", "the body is not JSON of the expected shape: "+bodyErrorDetail(err))
	}
	if dec.More() {
		return problem(400, wire.ProblemMalformed, "Bad Request", "the body holds more than one JSON value")
	}
	return nil
}

func hasUserMessage(msgs []conversation.Message) bool {
	for i := range msgs {
		if msgs[i].Role == conversation.RoleUser && !msgs[i].HasToolResult() {
			return true
		}
	}
	return false
}
