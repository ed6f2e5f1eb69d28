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
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// archiveWait is how often an Archive expiry looks at its final Checkpoint while it is being
// written (the Checkpoint watch usually wakes it first).
const archiveWait = 2 * time.Second

// deleteHistory applies expirationPolicy Delete: every epoch and checkpoint of the history
// goes. Repeating it after a restart is harmless (a missing history is not an error).
func (r *ConversationReconciler) deleteHistory(ctx context.Context, s *conversationScope) {
	conv := s.withStatus()
	if err := r.Sessions.Delete(ctx, conv); err != nil {
		r.historyFailed(s, err)
		return
	}
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
		err := r.createCheckpoint(ctx, conv, name, parleyv1alpha1.CheckpointArchive, nil)
		if ref := r.checkpointRefused(s, name, parleyv1alpha1.CheckpointArchive, err); ref != nil {
			// The history is fine and stays live: say on Expired what the archive waits for.
			if c := s.condition(parleyv1alpha1.ConditionExpired); c != nil {
				s.setCondition(parleyv1alpha1.ConditionExpired, c.Status, c.Reason, expiredMessage(s.conv, s.expiry)+
					fmt.Sprintf("; the live history is kept until the final Checkpoint %s is admitted: %s", name, ref.why))
			}
			return
		}
		if err != nil {
			r.historyFailed(s, err)
			return
		}
		s.event(parleyv1alpha1.EventCheckpointCreated, "Archive", "final Checkpoint %s created before archiving the history", name)
		s.requeueAfter(archiveWait)
		return
	case err != nil:
		r.historyFailed(s, err)
		return
	case finalCheckpointOf(ckpt, conv) != "":
		r.historyFailed(s, errFinalCheckpoint(name, finalCheckpointOf(ckpt, conv)))
		return
	case ckpt.Status.Phase != parleyv1alpha1.CheckpointReady:
		if ckpt.Status.Phase == parleyv1alpha1.CheckpointFailed {
			r.historyFailed(s, fmt.Errorf("final Checkpoint %s failed; the live history is kept until it succeeds (delete it to retry)", name))
			return
		}
		s.requeueAfter(archiveWait)
		return
	}

	epoch, err := r.emptyLiveEpoch(ctx, conv, func(live *conversation.State) error {
		if gap := finalCheckpointHolds(ckpt, conv, live); gap != "" {
			return errFinalCheckpoint(name, gap)
		}
		return nil
	})
	if err != nil {
		r.historyFailed(s, err)
		return
	}
	s.status.History = &parleyv1alpha1.HistoryStatus{Location: historystore.Location(conv), Epoch: int64(epoch)}
	s.status.Context = nil
	s.status.LatestCheckpoint = name
	s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionFalse, parleyv1alpha1.ReasonHistoryArchived,
		fmt.Sprintf("the session expired; its final state is Checkpoint %s and the live history was removed (expirationPolicy Archive)", name))
	s.event(parleyv1alpha1.EventHistoryArchived, "Archive", "live history removed; final state kept in Checkpoint %s", name)
}

// errFinalCheckpoint keeps the live history when the Checkpoint under the final Checkpoint's
// name cannot stand for it (see finalCheckpointOf).
func errFinalCheckpoint(name, why string) error {
	return fmt.Errorf("the Checkpoint %s under the final Checkpoint's name %s; the live history is kept (delete that Checkpoint to archive again)", name, why)
}

// emptyLiveEpoch replaces the live epoch with an empty one (by session.Live.Rewrite: an
// append after expiry, which the Session API refuses, would still be carried into it), removes
// the old epochs and forgets the view, once kept agrees that the state emptied is kept
// elsewhere. It returns the epoch left live; 0 when the history was never created.
func (r *ConversationReconciler) emptyLiveEpoch(ctx context.Context, conv *parleyv1alpha1.Conversation, kept func(*conversation.State) error) (uint64, error) {
	live, err := r.Sessions.Open(ctx, conv, false)
	if errors.Is(err, history.ErrNotFound) {
		if l, err := r.Sessions.Of(conv); err == nil {
			l.Drop()
		}
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer live.Drop()
	done, err := live.Rewrite(ctx, func(_ context.Context, snap *journal.Snapshot) (*session.Epoch, error) {
		if snap.Sequence == 0 {
			return nil, nil // empty already
		}
		if err := kept(&snap.State); err != nil {
			return nil, err
		}
		return &session.Epoch{}, nil
	})
	if err != nil {
		return 0, err
	}
	if err := live.History().Retain(ctx, history.Retention{KeepEpochs: 0}); err != nil {
		return 0, err
	}
	return done.Head.Epoch, nil
}
