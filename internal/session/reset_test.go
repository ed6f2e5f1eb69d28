package session

import (
	"slices"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
)

// TestResetClearsWhatTheCheckpointHoldsOnce: a reset removes the messages the Checkpoint holds
// as they are, keeps the others, and a retry of the same request finds its epoch and writes
// nothing more.
func TestResetClearsWhatTheCheckpointHoldsOnce(t *testing.T) {
	live := openLive(t, "m1", "m2", "m3")
	held := conversation.NewState("s1")
	for _, id := range []string{"m1", "m2"} {
		if _, err := held.AppendMessage(conversation.Message{
			ID: id, Role: conversation.RoleUser, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: id}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	req := Reset{ID: "r1", Checkpoint: "c-reset", Held: &held, Time: time.Unix(0, 0).UTC()}
	first, err := live.Reset(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := live.Reset(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	epoch, ids := messageIDs(t, live)
	if first.Cleared != 2 || first.Kept != 1 || again != first || epoch != 2 || !slices.Equal(ids, []string{"m3"}) {
		t.Fatalf("reset %+v, retried %+v; live epoch %d holds %v, want 2 cleared once and epoch 2 holding [m3]", first, again, epoch, ids)
	}
	if done, ok := live.ResetDone(t.Context(), "r1"); !ok || done != first {
		t.Fatalf("ResetDone = %+v, %v; want the first reset", done, ok)
	}
}
