package controller

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// forkedState reads the snapshot of spec.forkFrom's Checkpoint, verified, and makes it the
// start of this conversation: its own session id, the Claude adapter state marked as forked
// so the agent resumes it as a new SDK session instead of writing into the source's.
func (r *ConversationReconciler) forkedState(ctx context.Context, conv *parleyv1alpha1.Conversation) (conversation.State, error) {
	name := conv.Spec.ForkFrom.Checkpoint
	ckpt := &parleyv1alpha1.Checkpoint{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: conv.Namespace, Name: name}, ckpt); err != nil {
		if apierrors.IsNotFound(err) {
			return conversation.State{}, &historystore.Error{
				Reason:  parleyv1alpha1.ReasonCheckpointNotFound,
				Message: fmt.Sprintf("Checkpoint %s/%s (spec.forkFrom.checkpoint) does not exist", conv.Namespace, name),
			}
		}
		return conversation.State{}, err
	}
	// The admission policy checked the author's right to read the conversation named here.
	if want := conv.Spec.ForkFrom.Conversation; want != "" && want != ckpt.Spec.ConversationRef.Name {
		return conversation.State{}, &historystore.Error{
			Reason: parleyv1alpha1.ReasonForkSourceMismatch,
			Message: fmt.Sprintf("Checkpoint %s/%s belongs to Conversation %s, not to %s (spec.forkFrom.conversation); the fork is not made",
				conv.Namespace, name, ckpt.Spec.ConversationRef.Name, want),
		}
	}
	if ckpt.Status.Phase != parleyv1alpha1.CheckpointReady || ckpt.Status.Digest == "" {
		return conversation.State{}, &historystore.Error{
			Reason: parleyv1alpha1.ReasonCheckpointNotReady,
			Message: fmt.Sprintf("Checkpoint %s/%s (spec.forkFrom.checkpoint) has no snapshot yet (phase %q); the fork waits for it",
				conv.Namespace, name, ckpt.Status.Phase),
		}
	}
	source := &parleyv1alpha1.Conversation{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: conv.Namespace, Name: ckpt.Spec.ConversationRef.Name}, source); err != nil {
		if apierrors.IsNotFound(err) {
			return conversation.State{}, &historystore.Error{
				Reason:  parleyv1alpha1.ReasonCheckpointNotFound,
				Message: fmt.Sprintf("the Conversation %s of Checkpoint %s is gone, and its snapshots with it", ckpt.Spec.ConversationRef.Name, name),
			}
		}
		return conversation.State{}, err
	}
	if source.Status.SessionID != ckpt.Status.SessionID {
		return conversation.State{}, &historystore.Error{
			Reason: parleyv1alpha1.ReasonCheckpointNotFound,
			Message: fmt.Sprintf("Checkpoint %s belongs to session %s, but Conversation %s is now session %s",
				name, ckpt.Status.SessionID, source.Name, source.Status.SessionID),
		}
	}
	live, err := r.Sessions.Open(ctx, source, false)
	if err != nil {
		return conversation.State{}, err
	}
	data, err := live.History().GetCheckpoint(ctx, history.Digest(ckpt.Status.Digest))
	if err != nil {
		if errors.Is(err, history.ErrCorrupt) {
			return conversation.State{}, snapshotCorrupt(name, err)
		}
		return conversation.State{}, err
	}
	snap, err := conversation.UnmarshalSnapshot(data)
	if err != nil {
		return conversation.State{}, snapshotCorrupt(name, err)
	}
	return forkOf(snap.State, conv.Status.SessionID), nil
}

func snapshotCorrupt(checkpoint string, err error) error {
	return &historystore.Error{
		Reason:  parleyv1alpha1.ReasonSnapshotCorrupt,
		Message: fmt.Sprintf("the snapshot of Checkpoint %s failed verification and was not used", checkpoint), Err: err,
	}
}

// forkOf is a snapshot's state as the first state of a new session: the new session id, and a
// Claude Agent SDK state that says which session it was forked from (the agent resumes with
// forkSession so the SDK starts a new session id instead of appending to the source's).
func forkOf(s conversation.State, sessionID string) conversation.State {
	s.SessionID = sessionID
	adapters := make(conversation.AdapterStates, 0, len(s.Adapters))
	for _, a := range s.Adapters {
		if c, ok := a.(*conversation.ClaudeAgentSDKState); ok {
			forked := *c
			if forked.ForkedFrom == "" {
				forked.ForkedFrom = c.SessionID
			}
			a = &forked
		}
		adapters = append(adapters, a)
	}
	s.Adapters = adapters
	return s
}
