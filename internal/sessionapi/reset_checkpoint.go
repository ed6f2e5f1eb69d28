package sessionapi

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/wire"
)

// DefaultResetWait bounds how long a reset waits for its Checkpoint to be Ready (the leader's
// Checkpoint controller writes it); past it the client is told to retry with the same key.
const DefaultResetWait = 25 * time.Second

// resetResult is what AnnotationResetResult holds once the reset's epoch is written.
type resetResult struct {
	Epoch   uint64 `json:"epoch"`
	Cleared int    `json:"cleared"`
	Kept    int    `json:"kept,omitempty"`
}

// A reset creates its Checkpoint and records its result on it with a patch.
// +kubebuilder:rbac:groups=parley.dev,resources=checkpoints,verbs=create;patch

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
	if p := checkpointRefused(name, err); p != nil {
		p.Detail += "; nothing was cleared: make room (delete Checkpoints, lower spec.checkpoints.keep) and retry with the same id"
		return nil, p
	}
	if err != nil {
		return nil, problem(503, wire.ProblemUnavailable, "Service Unavailable", "reading or creating the Reset Checkpoint failed")
	}
	if ckpt.Annotations[parleyv1alpha1.AnnotationResetKey] != keyID || ckpt.Spec.ConversationRef.Name != req.conv.Name ||
		ckpt.Spec.GetReason() != parleyv1alpha1.CheckpointReset {
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

// recordedResult is the result a reset recorded on its Checkpoint, if it did.
func recordedResult(ckpt *parleyv1alpha1.Checkpoint) (resetResult, bool) {
	var done resetResult
	res, ok := ckpt.Annotations[parleyv1alpha1.AnnotationResetResult]
	if !ok || json.Unmarshal([]byte(res), &done) != nil {
		return resetResult{}, false
	}
	return done, true
}

// recordResult records a reset's result on its Checkpoint, best effort: the epoch's first
// record answers a retry while that epoch is current.
func (s *Server) recordResult(ctx context.Context, ckpt *parleyv1alpha1.Checkpoint, res resetResult) {
	b, err := json.Marshal(res)
	if err != nil {
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		parleyv1alpha1.AnnotationResetResult: string(b),
	}}})
	_ = s.Writer.Patch(ctx, ckpt, client.RawPatch(types.MergePatchType, patch))
}
