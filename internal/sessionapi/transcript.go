package sessionapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/pkg/wire"
)

// The agent's own transcript (Claude Agent SDK SessionStore, clients/claude-agent-sdk-session-store): lines
// stored byte for byte as journal transcript records, which the conversation's view imports
// into its messages, so the history and the transcript are one.

// maxTranscriptPage bounds the lines of one GET …/transcript answer; maxTranscriptOffset
// keeps offset arithmetic far from overflow.
const (
	maxTranscriptPage   = 1000
	maxTranscriptOffset = 1 << 40
)

func (s *Server) appendTranscript(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	var body wire.TranscriptAppendRequest
	if p := s.decode(w, r, &body); p != nil {
		return p
	}
	switch n := len(body.Entries); {
	case n == 0:
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", "entries is empty")
	case n > s.limits().MaxBatch:
		return problem(413, wire.ProblemTooLarge, "Content Too Large", fmt.Sprintf("%d entries in one append; at most %d", n, s.limits().MaxBatch))
	}
	batch := body.Batch
	if batch == "" {
		batch = randomID()
	}
	entries := make([]jsontext.Value, len(body.Entries))
	for i, e := range body.Entries {
		entries[i] = jsontext.Value(e)
	}
	records, err := journal.TranscriptRecords(body.Subpath, batch, entries, time.Now())
	if err != nil {
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", err.Error())
	}
	seqs, p := s.appendRecords(r, req, records)
	if p != nil {
		return p
	}
	writeJSON(w, http.StatusOK, wire.TranscriptAppendResponse{Sequences: seqs})
	return nil
}

func (s *Server) getTranscript(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	q := r.URL.Query()
	subpath := q.Get("subpath")
	if err := journal.CheckTranscriptSubpath(subpath); err != nil {
		return problem(400, wire.ProblemMalformed, "Bad Request", err.Error())
	}
	offset, err := uintParam(q.Get("offset"), 0)
	if err != nil || offset > maxTranscriptOffset {
		return problem(400, wire.ProblemMalformed, "Bad Request", "offset must be a number of lines")
	}
	limit, err := uintParam(q.Get("limit"), maxTranscriptPage)
	if err != nil || limit == 0 {
		return problem(400, wire.ProblemMalformed, "Bad Request", "limit must be a positive number")
	}
	return s.answerFromView(w, r, req, false, func(v *journal.View) (any, *wire.Problem) {
		t, p := s.transcriptLines(req, v, subpath)
		if p != nil {
			return nil, p
		}
		page := wire.TranscriptPage{Subpath: subpath, Epoch: v.Epoch, Exists: t.exists, Entries: []json.RawMessage{}}
		start := min(int(offset), len(t.lines))
		end := start + min(int(limit), maxTranscriptPage, len(t.lines)-start)
		for _, l := range t.lines[start:end] {
			page.Entries = append(page.Entries, json.RawMessage(l))
		}
		if end < len(t.lines) {
			page.Next = end
		}
		return page, nil
	})
}

// renderedTranscript is a transcript's lines as the view renders them.
type renderedTranscript struct {
	lines  []jsontext.Value
	exists bool
}

// transcriptLines renders subpath's transcript from v, or takes the rendering kept since the
// history last changed. A rendering exports what the epoch held before the agent's first
// line, a cost of the whole history: it is charged and kept as a whole-history answer
// (wholehistory.go), so a client reading the pages one after the other pays for one
// rendering. It is a copy: the view's own bytes are never shared past its hold.
func (s *Server) transcriptLines(req *request, v *journal.View, subpath string) (renderedTranscript, *wire.Problem) {
	const metric = "GET transcript"
	key := wholeKey(req, v, metric+"?"+url.Values{"subpath": {subpath}}.Encode())
	if cached, ok := s.answerCache.get(key); ok {
		metrics.SessionAPIWholeHistoryAnswers.WithLabelValues(metric, "cached").Inc()
		return cached.(renderedTranscript), nil
	}
	if p := s.chargeWhole(req, v, metric); p != nil {
		return renderedTranscript{}, p
	}
	lines, exists, err := v.TranscriptLines(subpath)
	if err != nil {
		return renderedTranscript{}, problem(503, wire.ProblemUnavailable, "Service Unavailable", "the transcript could not be written out: "+err.Error())
	}
	out := renderedTranscript{lines: make([]jsontext.Value, len(lines)), exists: exists}
	var size int64
	for i, l := range lines {
		out.lines[i] = bytes.Clone(l)
		size += int64(len(l))
	}
	metrics.SessionAPIWholeHistoryAnswers.WithLabelValues(metric, "built").Inc()
	s.answerCache.put(key, out, size)
	return out, nil
}

func (s *Server) listTranscripts(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	route := routeName(http.MethodGet, "/transcripts")
	return s.answerWhole(w, r, req, route, route, func(v *journal.View) (any, *wire.Problem) {
		out := wire.TranscriptIndex{SessionID: req.conv.Status.SessionID, Epoch: v.Epoch, Transcripts: []wire.TranscriptInfo{}}
		// A transcript that holds only what Parley had before the agent's first line was last
		// changed when the conversation was.
		changed := req.conv.CreationTimestamp.Time
		if a := req.conv.Status.LastActivityTime; a != nil {
			changed = a.Time
		}
		for _, t := range v.Transcripts() {
			m := t.Modified
			if m.IsZero() {
				m = changed
			}
			m = m.UTC()
			out.Transcripts = append(out.Transcripts, wire.TranscriptInfo{Subpath: t.Subpath, Modified: &m})
		}
		return out, nil
	})
}
