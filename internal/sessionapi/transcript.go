package sessionapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/internal/journal"
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
	route := routeName(http.MethodGet, "/transcript")
	params := url.Values{"subpath": {subpath}, "offset": {strconv.FormatUint(offset, 10)}, "limit": {strconv.FormatUint(limit, 10)}}
	return s.answerWhole(w, r, req, route, route+"?"+params.Encode(), func(v *journal.View) (any, *wire.Problem) {
		lines, exists, err := v.TranscriptLines(subpath)
		if err != nil {
			return nil, problem(503, wire.ProblemUnavailable, "Service Unavailable", "the transcript could not be written out: "+err.Error())
		}
		page := wire.TranscriptPage{Subpath: subpath, Epoch: v.Epoch, Exists: exists, Entries: []json.RawMessage{}}
		start := min(int(offset), len(lines))
		end := start + min(int(limit), maxTranscriptPage, len(lines)-start)
		for _, l := range lines[start:end] {
			page.Entries = append(page.Entries, json.RawMessage(l))
		}
		if end < len(lines) {
			page.Next = end
		}
		return page, nil
	})
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
