package sessionapi

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/names"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/wire"
)

// DefaultResetWait bounds how long a reset waits for its Checkpoint to be Ready (the leader's
// Checkpoint controller writes it); past it the client is told to retry with the same key.
const DefaultResetWait = 25 * time.Second

// resetAttempts bounds the rereads when appends or a compaction move the history under a reset.
const resetAttempts = 3

// maxIdempotencyKey bounds the Idempotency-Key a client may send.
const maxIdempotencyKey = 256

// resetResult is what AnnotationResetResult holds once the reset's epoch is written.
type resetResult struct {
	Epoch   uint64 `json:"epoch"`
	Cleared int    `json:"cleared"`
	Kept    int    `json:"kept,omitempty"`
}

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
	key := body.ID
	if key == "" {
		key = r.Header.Get(wire.IdempotencyKeyHeader)
	}
	if len(key) > maxIdempotencyKey {
		return problem(400, wire.ProblemMalformed, "Bad Request", fmt.Sprintf("the reset id is longer than %d bytes", maxIdempotencyKey))
	}
	if key == "" {
		key = randomID() // no key: every call is a reset of its own
	}
	sum := sha256.Sum256([]byte(req.conv.Namespace + "/" + req.conv.Name + "\x00" + key))
	keyID := hex.EncodeToString(sum[:16])
	name := names.Child(req.conv.Name, "reset-"+keyID[:12])

	ckpt, p := s.resetCheckpoint(r.Context(), req, name, keyID)
	if p != nil {
		return p
	}
	if res, ok := ckpt.Annotations[parleyv1alpha1.AnnotationResetResult]; ok {
		var done resetResult
		if err := json.Unmarshal([]byte(res), &done); err == nil {
			writeJSON(w, http.StatusOK, wire.ResetResponse{Epoch: done.Epoch, Checkpoint: name, Cleared: done.Cleared, Kept: done.Kept})
			return nil
		}
	}
	h, err := s.Stores.Open(r.Context(), req.conv, false)
	if err != nil {
		return storeProblem(err)
	}
	hkey, err := historystore.Key(req.conv)
	if err != nil {
		return storeProblem(err)
	}
	// A reset whose epoch was written but not yet recorded on the Checkpoint (the replica died
	// in between) is found by the epoch's first record.
	if done, ok := s.resetDone(r, req, h, hkey, keyID); ok {
		return s.answerReset(w, r, req, ckpt, done)
	}
	if ckpt, p = s.waitReady(r.Context(), ckpt); p != nil {
		return p
	}
	raw, err := h.GetCheckpoint(r.Context(), history.Digest(ckpt.Status.Digest))
	if err != nil {
		return storeProblem(err)
	}
	held, err := conversation.UnmarshalSnapshot(raw)
	if err != nil {
		return problem(503, wire.ProblemUnavailable, "Service Unavailable", "the Reset Checkpoint's snapshot cannot be read back: "+err.Error())
	}
	for range resetAttempts {
		var (
			rec     journal.Reset
			records []history.Record
			epoch   uint64
			kerr    error
			done    *journal.Reset
		)
		err := s.Views.With(r.Context(), hkey, req.conv.Status.SessionID, tokenizerOf(req.conv), h, func(v *journal.View) error {
			if v.LastReset != nil && v.LastReset.ID == keyID {
				c := *v.LastReset
				done = &c
				return nil
			}
			state, cleared := journal.ResetState(&v.State, &held.State, body.KeepSystem)
			epoch = v.Epoch
			rec = journal.Reset{
				ID: keyID, Time: time.Now().UTC(), Checkpoint: ckpt.Name, FromEpoch: v.Epoch, Through: v.Sequence,
				KeepSystem: body.KeepSystem, Cleared: cleared, Kept: len(state.Messages),
			}
			records, kerr = journal.ResetRecords(&rec, &state, v.Epoch+1)
			return nil
		})
		switch {
		case err != nil:
			return storeProblem(err)
		case done != nil:
			return s.answerReset(w, r, req, ckpt, *done)
		case kerr != nil:
			return problem(422, wire.ProblemInvalid, "Unprocessable Content", "the reset history cannot be encoded: "+kerr.Error())
		}
		_, err = h.NewEpoch(r.Context(), history.EpochRequest{Epoch: epoch, Through: rec.Through, Records: records})
		if errors.Is(err, history.ErrConflict) {
			continue // the epoch moved (a compaction, another reset): read it again
		}
		if err != nil {
			return storeProblem(err)
		}
		return s.answerReset(w, r, req, ckpt, rec)
	}
	return problem(503, wire.ProblemUnavailable, "Service Unavailable",
		fmt.Sprintf("the history kept moving during %d attempts; nothing was cleared: retry with the same id", resetAttempts))
}

// resetCheckpoint finds or creates the reset's Checkpoint. The manager creates it, on behalf
// of a caller who was allowed to reset (delete on conversations/history); the annotations say
// who asked and tie it to the key.
func (s *Server) resetCheckpoint(ctx context.Context, req *request, name, keyID string) (*parleyv1alpha1.Checkpoint, *wire.Problem) {
	nn := types.NamespacedName{Namespace: req.conv.Namespace, Name: name}
	ckpt := &parleyv1alpha1.Checkpoint{}
	err := s.Writer.Get(ctx, nn, ckpt)
	if apierrors.IsNotFound(err) {
		ckpt = &parleyv1alpha1.Checkpoint{
			ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name, Annotations: map[string]string{
				parleyv1alpha1.AnnotationResetKey:         keyID,
				parleyv1alpha1.AnnotationResetRequestedBy: req.caller.user.Username,
			}},
			Spec: parleyv1alpha1.CheckpointSpec{
				ConversationRef: parleyv1alpha1.ConversationReference{Name: req.conv.Name},
				Reason:          parleyv1alpha1.CheckpointReset,
			},
		}
		err = s.Writer.Create(ctx, ckpt)
		if apierrors.IsAlreadyExists(err) { // a concurrent retry created it
			err = s.Writer.Get(ctx, nn, ckpt)
		}
	}
	if err != nil {
		return nil, problem(503, wire.ProblemUnavailable, "Service Unavailable", "reading or creating the Reset Checkpoint failed")
	}
	if ckpt.Annotations[parleyv1alpha1.AnnotationResetKey] != keyID || ckpt.Spec.ConversationRef.Name != req.conv.Name ||
		ckpt.Spec.Reason != parleyv1alpha1.CheckpointReset {
		return nil, problem(409, wire.ProblemConflict, "Conflict", "a Checkpoint named "+name+" exists and is not this reset's")
	}
	if ckpt.Status.SessionID != "" && ckpt.Status.SessionID != req.conv.Status.SessionID {
		return nil, problem(409, wire.ProblemConflict, "Conflict", "the Reset Checkpoint "+name+" belongs to another session of this name")
	}
	return ckpt, nil
}

// waitReady polls the Checkpoint until it is Ready, Failed, or the wait ends.
func (s *Server) waitReady(ctx context.Context, ckpt *parleyv1alpha1.Checkpoint) (*parleyv1alpha1.Checkpoint, *wire.Problem) {
	wait := s.ResetWait
	if wait <= 0 {
		wait = DefaultResetWait
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	nn := client.ObjectKeyFromObject(ckpt)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		switch ckpt.Status.Phase {
		case parleyv1alpha1.CheckpointReady:
			return ckpt, nil
		case parleyv1alpha1.CheckpointFailed:
			msg := ""
			if c := meta.FindStatusCondition(ckpt.Status.Conditions, parleyv1alpha1.ConditionReady); c != nil {
				msg = ": " + c.Message
			}
			return nil, problem(409, wire.ProblemConflict, "Conflict", fmt.Sprintf(
				"the Reset Checkpoint %s failed%s; nothing was cleared (delete it to retry with the same key, or use another key)", ckpt.Name, msg))
		}
		select {
		case <-ctx.Done():
			return nil, problem(503, wire.ProblemNotReady, "Service Unavailable", fmt.Sprintf(
				"the Reset Checkpoint %s is not Ready yet; nothing was cleared: retry with the same id", ckpt.Name))
		case <-tick.C:
		}
		fresh := &parleyv1alpha1.Checkpoint{}
		if err := s.Writer.Get(ctx, nn, fresh); err == nil {
			ckpt = fresh
		}
	}
}

// resetDone reports the reset of this key that wrote the current epoch, if it did.
func (s *Server) resetDone(r *http.Request, req *request, h history.History, hkey, keyID string) (journal.Reset, bool) {
	var done journal.Reset
	found := false
	_ = s.Views.With(r.Context(), hkey, req.conv.Status.SessionID, tokenizerOf(req.conv), h, func(v *journal.View) error {
		if v.LastReset != nil && v.LastReset.ID == keyID {
			done, found = *v.LastReset, true
		}
		return nil
	})
	return done, found
}

// answerReset records the result on the Checkpoint (best effort: the epoch's first record
// answers a retry while that epoch is current), marks the conversation active so the
// controller refreshes status, and answers.
func (s *Server) answerReset(w http.ResponseWriter, r *http.Request, req *request, ckpt *parleyv1alpha1.Checkpoint, done journal.Reset) *wire.Problem {
	res := resetResult{Epoch: done.FromEpoch + 1, Cleared: done.Cleared, Kept: done.Kept}
	if b, err := json.Marshal(res); err == nil {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			parleyv1alpha1.AnnotationResetResult: string(b),
		}}})
		_ = s.Writer.Patch(r.Context(), ckpt, client.RawPatch(types.MergePatchType, patch))
	}
	if s.Activity != nil {
		s.Activity.Touch(req.conv)
	}
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

func tokenizerOf(conv *parleyv1alpha1.Conversation) string {
	if t := string(conv.Spec.Context.Tokenizer); t != "" {
		return t
	}
	return "cl100k_base"
}
