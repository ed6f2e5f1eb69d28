package session

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/memory"
)

// oneHistory is a Stores holding one history.
type oneHistory struct{ h history.History }

func (o oneHistory) Open(context.Context, *parleyv1alpha1.Conversation, bool) (history.History, error) {
	return o.h, nil
}

func (o oneHistory) Delete(context.Context, *parleyv1alpha1.Conversation) error { return nil }

// openLive opens a conversation over a fresh in-memory history holding messages ids.
func openLive(t *testing.T, ids ...string) *Live {
	t.Helper()
	h, err := memory.New(memory.Options{}).Open(t.Context(), "h", history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Append(t.Context(), records(t, ids...)); err != nil {
		t.Fatal(err)
	}
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
		Spec:       parleyv1alpha1.ConversationSpec{Context: parleyv1alpha1.ContextSpec{Tokenizer: parleyv1alpha1.TokenizerApproximate}},
		Status:     parleyv1alpha1.ConversationStatus{SessionID: "s1"},
	}
	live, err := (&Sessions{Stores: oneHistory{h}}).Open(t.Context(), conv, false)
	if err != nil {
		t.Fatal(err)
	}
	return live
}

func records(t *testing.T, ids ...string) []history.Record {
	t.Helper()
	out := make([]history.Record, len(ids))
	for i, id := range ids {
		rec, err := journal.MessageRecord(&conversation.Message{
			ID: id, Role: conversation.RoleUser, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: id}},
		})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = rec
	}
	return out
}

// keepLast plans an epoch that keeps only the last message of the snapshot, as a compaction
// that folds the rest would.
func keepLast(t *testing.T, snap *journal.Snapshot) *Epoch {
	msgs := snap.State.Messages
	return &Epoch{Records: records(t, msgs[len(msgs)-1].ID)}
}

// messageIDs reads the live epoch through the view, as the next reconcile would.
func messageIDs(t *testing.T, live *Live) (epoch uint64, ids []string) {
	t.Helper()
	if err := live.With(t.Context(), func(v *journal.View) error {
		epoch = v.Epoch
		for _, m := range v.State.Messages {
			ids = append(ids, m.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return epoch, ids
}

// TestRewriteKeepsAnAppendLandingBetweenPlanAndSwap: a message acknowledged while the plan ran
// is not in the plan, and is carried into the new epoch after the planned records.
func TestRewriteKeepsAnAppendLandingBetweenPlanAndSwap(t *testing.T) {
	live := openLive(t, "m1", "m2")
	done, err := live.Rewrite(t.Context(), func(ctx context.Context, snap *journal.Snapshot) (*Epoch, error) {
		if _, err := live.History().Append(ctx, records(t, "m3")); err != nil {
			return nil, err
		}
		return keepLast(t, snap), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	epoch, ids := messageIDs(t, live)
	if !done.Written || epoch != 2 || done.Head.Epoch != 2 || !slices.Equal(ids, []string{"m2", "m3"}) {
		t.Fatalf("rewrote %+v; live epoch %d holds %v, want epoch 2 holding [m2 m3]", done, epoch, ids)
	}
}

// TestRewriteReplansWhenAnotherRewriteWins: another rewrite (another replica's compaction)
// swaps first, and a message is appended to its epoch. The swap planned from the old epoch
// must not be forced: the new epoch is read and planned again, and the message is kept.
func TestRewriteReplansWhenAnotherRewriteWins(t *testing.T) {
	live := openLive(t, "m1", "m2")
	h := live.History()
	var planned []uint64
	done, err := live.Rewrite(t.Context(), func(ctx context.Context, snap *journal.Snapshot) (*Epoch, error) {
		planned = append(planned, snap.Epoch)
		if len(planned) == 1 {
			if _, err := h.NewEpoch(ctx, history.EpochRequest{Epoch: snap.Epoch, Through: snap.Sequence, Records: records(t, "m1", "m2")}); err != nil {
				return nil, err
			}
			if _, err := h.Append(ctx, records(t, "m3")); err != nil {
				return nil, err
			}
		}
		return keepLast(t, snap), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	epoch, ids := messageIDs(t, live)
	if !slices.Equal(planned, []uint64{1, 2}) || !done.Written || epoch != 3 || !slices.Equal(ids, []string{"m3"}) {
		t.Fatalf("planned from epochs %v, rewrote %+v; live epoch %d holds %v, want plans from [1 2] and epoch 3 holding [m3]",
			planned, done, epoch, ids)
	}
}

// TestRewriteGivesUpWhileTheHistoryKeepsMoving: a rewrite that loses every swap writes nothing
// and says so.
func TestRewriteGivesUpWhileTheHistoryKeepsMoving(t *testing.T) {
	live := openLive(t, "m1", "m2")
	h := live.History()
	plans := 0
	_, err := live.Rewrite(t.Context(), func(ctx context.Context, snap *journal.Snapshot) (*Epoch, error) {
		plans++
		if _, err := h.NewEpoch(ctx, history.EpochRequest{Epoch: snap.Epoch, Through: snap.Sequence, Records: records(t, "m1", "m2")}); err != nil {
			return nil, err
		}
		return keepLast(t, snap), nil
	})
	if !errors.Is(err, ErrKeptMoving) || !errors.Is(err, history.ErrConflict) || plans != RewriteAttempts {
		t.Fatalf("error %v after %d plans, want ErrKeptMoving after %d", err, plans, RewriteAttempts)
	}
	if head, err := h.Head(t.Context()); err != nil || head.Epoch != 1+RewriteAttempts || head.Sequence != 2 {
		t.Fatalf("head %+v (%v), want only the other rewrites' epochs, each holding m1 and m2", head, err)
	}
}

// TestRewriteWithoutAnEpochWritesNothing: a plan that finds nothing to do leaves the epoch.
func TestRewriteWithoutAnEpochWritesNothing(t *testing.T) {
	live := openLive(t, "m1")
	done, err := live.Rewrite(t.Context(), func(context.Context, *journal.Snapshot) (*Epoch, error) { return nil, nil })
	if err != nil || done.Written || done.Head.Epoch != 1 || done.Head.Sequence != 1 {
		t.Fatalf("rewrote %+v (%v), want nothing written at epoch 1 sequence 1", done, err)
	}
}
