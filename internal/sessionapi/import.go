package sessionapi

import (
	"fmt"
	"net/http"
	"regexp"

	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
)

// importID keeps the records' ids short and readable: a digest, a name.
var importID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// appendImport appends one part of an imported state as the records a seed or a fork writes
// (journal.StateRecords): session fields, system prompt, messages with the transcript records
// around them, subagent threads, adapter reports. What POST …/messages and …/events cannot
// carry — records that are no message, a transcript's own fields — comes through here, so an
// import exports back as it was read. Message and subagent records keep their own ids, the
// others are named by the import id and part: a retried part stores nothing twice.
func (s *Server) appendImport(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	var body wire.ImportRequest
	if p := s.decode(w, r, &body); p != nil {
		return p
	}
	if !importID.MatchString(body.ID) || body.Part < 0 {
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", "id must be 1-64 letters, digits, '.', '_' or '-', and part not negative")
	}
	st := body.State
	if st.SchemaVersion == "" {
		st.SchemaVersion = conversation.SchemaVersion
	}
	if n := len(st.Messages); n > s.limits().MaxBatch {
		return problem(413, wire.ProblemTooLarge, "Content Too Large", fmt.Sprintf("%d messages in one part; at most %d", n, s.limits().MaxBatch))
	}
	if n := wire.ImportItems(&st); n > wire.MaxImportItems {
		return problem(413, wire.ProblemTooLarge, "Content Too Large",
			fmt.Sprintf("%d items in one part (messages, transcript records, subagent threads, adapter reports); at most %d", n, wire.MaxImportItems))
	}
	if err := st.Validate(); err != nil {
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", err.Error())
	}
	records, err := journal.StateRecords(&st, fmt.Sprintf("import:%s:%d:", body.ID, body.Part))
	if err != nil {
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", err.Error())
	}
	if len(records) == 0 {
		writeJSON(w, http.StatusOK, wire.ImportResponse{Sequences: []uint64{}})
		return nil
	}
	seqs, p := s.appendRecords(r, req, records)
	if p != nil {
		return p
	}
	writeJSON(w, http.StatusOK, wire.ImportResponse{Sequences: seqs})
	return nil
}
