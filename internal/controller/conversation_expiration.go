package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/pkg/history"
)

// archiveWait is how often an Archive expiry looks at its final Checkpoint while it is being
// written (the Checkpoint watch usually wakes it first).
const archiveWait = 2 * time.Second

// deleteHistory applies expirationPolicy Delete: every epoch and checkpoint of the history
// goes. Repeating it after a restart is harmless (a missing history is not an error).
func (r *ConversationReconciler) deleteHistory(ctx context.Context, s *conversationScope) {
	conv := s.withStatus()
	if err := r.Stores.Delete(ctx, conv); err != nil {
		r.historyFailed(s, err)
		return
	}
	r.dropView(conv)
	s.status.History = &parleyv1alpha1.HistoryStatus{Location: historystore.Location(conv)}
	s.status.Context = nil
	s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionFalse, parleyv1alpha1.ReasonHistoryDeleted,
		"the session expired and its history was deleted (expirationPolicy Delete)")
	s.event(parleyv1alpha1.EventHistoryDeleted, "Delete", "history at %s deleted on expiry", historystore.Location(conv))
}

// archiveHistory applies expirationPolicy Archive in steps that each survive a manager
// restart: create the final Checkpoint (a deterministic name, so a restart finds it instead
// of making a second), wait until its snapshot is written and verified, then replace the live
// epoch with an empty one and remove the old epochs. Checkpoints stay.
func (r *ConversationReconciler) archiveHistory(ctx context.Context, s *conversationScope) {
	conv := s.withStatus()
	name := archiveCheckpointName(conv.Name)
	ckpt := &parleyv1alpha1.Checkpoint{}
	err := r.Get(ctx, types.NamespacedName{Namespace: conv.Namespace, Name: name}, ckpt)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.createCheckpoint(ctx, conv, name, parleyv1alpha1.CheckpointArchive, nil); err != nil {
			r.historyFailed(s, err)
			return
		}
		s.event(parleyv1alpha1.EventCheckpointCreated, "Archive", "final Checkpoint %s created before archiving the history", name)
		s.requeueAfter(archiveWait)
		return
	case err != nil:
		r.historyFailed(s, err)
		return
	case ckpt.Status.Phase != parleyv1alpha1.CheckpointReady:
		if ckpt.Status.Phase == parleyv1alpha1.CheckpointFailed {
			r.historyFailed(s, fmt.Errorf("final Checkpoint %s failed; the live history is kept until it succeeds (delete it to retry)", name))
			return
		}
		s.requeueAfter(archiveWait)
		return
	}

	h, err := r.Stores.Open(ctx, conv, false)
	if err != nil && !errors.Is(err, history.ErrNotFound) {
		r.historyFailed(s, err)
		return
	}
	epoch := uint64(0)
	if h != nil {
		head, err := h.Head(ctx)
		if err != nil {
			r.historyFailed(s, err)
			return
		}
		epoch = head.Epoch
		if head.Sequence > 0 {
			// An empty epoch replaces the live one; a concurrent append (there should be none
			// after expiry) makes this a conflict, retried.
			if head, err = h.NewEpoch(ctx, history.EpochRequest{Epoch: head.Epoch, Through: head.Sequence}); err != nil {
				r.historyFailed(s, err)
				return
			}
			epoch = head.Epoch
		}
		if err := h.Retain(ctx, history.Retention{KeepEpochs: 0}); err != nil {
			r.historyFailed(s, err)
			return
		}
	}
	r.dropView(conv)
	s.status.History = &parleyv1alpha1.HistoryStatus{Location: historystore.Location(conv), Epoch: int64(epoch)}
	s.status.Context = nil
	s.status.LatestCheckpoint = name
	s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionFalse, parleyv1alpha1.ReasonHistoryArchived,
		fmt.Sprintf("the session expired; its final state is Checkpoint %s and the live history was removed (expirationPolicy Archive)", name))
	s.event(parleyv1alpha1.EventHistoryArchived, "Archive", "live history removed; final state kept in Checkpoint %s", name)
}

// withStatus is the Conversation as read, with the status being built (the session id).
func (s *conversationScope) withStatus() *parleyv1alpha1.Conversation {
	conv := s.conv.DeepCopy()
	conv.Status = *s.status.DeepCopy()
	return conv
}

func (r *ConversationReconciler) dropView(conv *parleyv1alpha1.Conversation) {
	if key, err := historystore.Key(conv); err == nil {
		r.Views.Drop(key)
	}
}
