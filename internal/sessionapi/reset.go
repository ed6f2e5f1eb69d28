package sessionapi

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/names"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/wire"
)

// maxIdempotencyKey bounds the Idempotency-Key a client may send.
const maxIdempotencyKey = 256

// resetHistory clears a conversation's history: a Reset Checkpoint is created and must be
// Ready first, then a new epoch holds only what the Checkpoint does not (the system prompt
// when asked, and whatever was appended or changed while the snapshot was taken). The
// Idempotency-Key makes a retry answer the first result: the Checkpoint's name and its
// annotations derive from the key (the body's id, or the Idempotency-Key header), and the new
// epoch's first record names it.
func (s *Server) resetHistory(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	if p := historyReady(req.conv, false); p != nil {
		return p
	}
	var body wire.ResetRequest
	if p := s.decodeOptional(w, r, &body); p != nil {
		return p
	}
	keyID, p := resetKeyID(r, req.conv, body.ID)
	if p != nil {
		return p
	}
	name := names.Child(req.conv.Name, "reset-"+keyID[:12])
	ckpt, p := s.resetCheckpoint(r.Context(), req, name, keyID)
	if p != nil {
		return p
	}
	if done, ok := recordedResult(ckpt); ok {
		writeJSON(w, http.StatusOK, wire.ResetResponse{Epoch: done.Epoch, Checkpoint: name, Cleared: done.Cleared, Kept: done.Kept})
		return nil
	}
	live, err := s.Sessions.Open(r.Context(), req.conv, false)
	if err != nil {
		return storeProblem(err)
	}
	if done, ok := live.ResetDone(r.Context(), keyID); ok {
		return s.answerReset(w, r, live, ckpt, done)
	}
	if ckpt, p = s.waitReady(r.Context(), ckpt); p != nil {
		return p
	}
	held, p := heldState(r.Context(), live, ckpt)
	if p != nil {
		return p
	}
	done, err := live.Reset(r.Context(), session.Reset{
		ID: keyID, Checkpoint: ckpt.Name, Held: held, KeepSystem: body.KeepSystem, Time: time.Now().UTC(),
	})
	var unencodable *session.UnencodableError
	switch {
	case errors.Is(err, session.ErrKeptMoving):
		return problem(503, wire.ProblemUnavailable, "Service Unavailable",
			fmt.Sprintf("the history kept moving during %d attempts; nothing was cleared: retry with the same id", session.RewriteAttempts))
	case errors.As(err, &unencodable):
		return problem(422, wire.ProblemInvalid, "Unprocessable Content", "the reset history cannot be encoded: "+unencodable.Err.Error())
	case err != nil:
		return storeProblem(err)
	}
	return s.answerReset(w, r, live, ckpt, done)
}

// resetKeyID identifies a reset request: a hash of the conversation and the client's key (the
// body's id, or the Idempotency-Key header; none makes every call a reset of its own).
func resetKeyID(r *http.Request, conv *parleyv1alpha1.Conversation, id string) (string, *wire.Problem) {
	key := id
	if key == "" {
		key = r.Header.Get(wire.IdempotencyKeyHeader)
	}
	if len(key) > maxIdempotencyKey {
		return "", problem(400, wire.ProblemMalformed, "Bad Request", fmt.Sprintf("the reset id is longer than %d bytes", maxIdempotencyKey))
	}
	if key == "" {
		key = randomID()
	}
	sum := sha256.Sum256([]byte(conv.Namespace + "/" + conv.Name + "\x00" + key))
	return hex.EncodeToString(sum[:16]), nil
}

// heldState reads back what the Reset Checkpoint's snapshot holds.
func heldState(ctx context.Context, live *session.Live, ckpt *parleyv1alpha1.Checkpoint) (*conversation.State, *wire.Problem) {
	raw, err := live.History().GetCheckpoint(ctx, history.Digest(ckpt.Status.Digest))
	if err != nil {
		return nil, storeProblem(err)
	}
	held, err := conversation.UnmarshalSnapshot(raw)
	if err != nil {
		return nil, problem(503, wire.ProblemUnavailable, "Service Unavailable", "the Reset Checkpoint's snapshot cannot be read back: "+err.Error())
	}
	return &held.State, nil
}

// answerReset records the result on the Checkpoint (best effort: the epoch's first record
// answers a retry while that epoch is current), marks the conversation active so the
// controller refreshes status, and answers.
func (s *Server) answerReset(w http.ResponseWriter, r *http.Request, live *session.Live, ckpt *parleyv1alpha1.Checkpoint, done journal.Reset) *wire.Problem {
	res := resetResult{Epoch: done.FromEpoch + 1, Cleared: done.Cleared, Kept: done.Kept}
	s.recordResult(r.Context(), ckpt, res)
	live.Touch()
	writeJSON(w, http.StatusOK, wire.ResetResponse{Epoch: res.Epoch, Checkpoint: ckpt.Name, Cleared: res.Cleared, Kept: res.Kept})
	return nil
}

// decodeOptional decodes a JSON body like decode, and leaves into as it is when there is none.
func (s *Server) decodeOptional(w http.ResponseWriter, r *http.Request, into any) *wire.Problem {
	body := bufio.NewReader(r.Body)
	if _, err := body.Peek(1); errors.Is(err, io.EOF) {
		return nil
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{body, r.Body}
	return s.decode(w, r, into)
}
