package sessionapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/wire"
)

// appendEvents stores reducer events in order, each under its client id, once all are valid.
// Every event is durable before the call returns (streamed deltas are not coalesced yet).
func (s *Server) appendEvents(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	var body wire.EventsRequest
	if p := s.decode(w, r, &body); p != nil {
		return p
	}
	switch n := len(body.Events); {
	case n == 0:
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", "events is empty")
	case n > s.limits().MaxBatch:
		return problem(413, wire.ProblemTooLarge, "Content Too Large", fmt.Sprintf("%d events in one call; at most %d", n, s.limits().MaxBatch))
	}
	records := make([]history.Record, len(body.Events))
	for i := range body.Events {
		rec, err := journal.EventRecord(body.Events[i].ID, &body.Events[i].Event)
		if err != nil {
			return problem(422, wire.ProblemInvalid, "Unprocessable Content", fmt.Sprintf("events[%d]: %v", i, err))
		}
		records[i] = rec
	}
	seqs, p := s.appendRecords(r, req, records)
	if p != nil {
		return p
	}
	writeJSON(w, http.StatusOK, wire.EventsResponse{Sequences: seqs})
	return nil
}

// putAdapterState records the adapter's latest state. With an Idempotency-Key a retry is
// stored once; without one every call is a new report.
func (s *Server) putAdapterState(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	var body wire.AdapterStateRequest
	if p := s.decode(w, r, &body); p != nil {
		return p
	}
	raw, err := json.Marshal(body.State)
	if err != nil || body.Type == "" {
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", "type and state are required")
	}
	st, err := conversation.DecodeAdapterState(body.Type, raw)
	if err != nil {
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", err.Error())
	}
	if !parleyv1alpha1.AdapterStateFits(st.Type(), st.Session()) {
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", fmt.Sprintf(
			"an adapter state's type may have at most %d bytes and its session id at most %d (this one: %d and %d)",
			parleyv1alpha1.MaxAdapterTypeLength, parleyv1alpha1.MaxAdapterSessionIDLength, len(st.Type()), len(st.Session())))
	}
	id := r.Header.Get(wire.IdempotencyKeyHeader)
	if id == "" {
		id = randomID()
	}
	rec, err := journal.AdapterRecord(id, st)
	if err != nil {
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", err.Error())
	}
	if _, p := s.appendRecords(r, req, []history.Record{rec}); p != nil {
		return p
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// appendRecords appends to a ready history and marks the conversation active.
func (s *Server) appendRecords(r *http.Request, req *request, records []history.Record) ([]uint64, *wire.Problem) {
	if p := historyReady(req.conv, false); p != nil {
		return nil, p
	}
	live, err := s.Sessions.Open(r.Context(), req.conv, false)
	if err != nil {
		return nil, storeProblem(err)
	}
	seqs, err := live.Append(r.Context(), records)
	if err != nil {
		return nil, storeProblem(err)
	}
	return seqs, nil
}

// createCheckpoint creates a Manual Checkpoint, if the caller may create Checkpoints in the
// namespace (the manager creates it, so its own rights must not stand in for the caller's).
func (s *Server) createCheckpoint(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	var body wire.CheckpointRequest
	if p := s.decode(w, r, &body); p != nil {
		return p
	}
	if p := s.Auth.authorizeResource(r.Context(), req.caller, &authzv1.ResourceAttributes{
		Namespace: req.conv.Namespace, Verb: "create", Group: parleyv1alpha1.GroupVersion.Group, Resource: "checkpoints",
	}); p != nil {
		return p
	}
	ckpt := &parleyv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: req.conv.Namespace, Name: body.Name},
		Spec: parleyv1alpha1.CheckpointSpec{
			ConversationRef: parleyv1alpha1.ConversationReference{Name: req.conv.Name},
			Reason:          parleyv1alpha1.CheckpointManual, Turn: body.Turn,
		},
	}
	if body.Name == "" {
		ckpt.GenerateName = req.conv.Name + "-"
	}
	if err := s.Writer.Create(r.Context(), ckpt); err != nil {
		switch {
		case apierrors.IsAlreadyExists(err):
			return problem(409, wire.ProblemConflict, "Conflict", "a Checkpoint named "+body.Name+" exists")
		case apierrors.IsInvalid(err):
			return problem(422, wire.ProblemInvalid, "Unprocessable Content", err.Error())
		case apierrors.IsForbidden(err):
			return checkpointRefused(body.Name, err)
		default:
			return problem(503, wire.ProblemUnavailable, "Service Unavailable", "creating the Checkpoint failed")
		}
	}
	writeJSON(w, http.StatusCreated, wire.CheckpointResponse{Name: ckpt.Name})
	return nil
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
