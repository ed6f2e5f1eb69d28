package controller

import (
	"fmt"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
)

// The final Checkpoint of an Archive expiry is found by its deterministic name, so that a
// restart finds the one it made instead of making a second. Whoever may create Checkpoints in
// the namespace can create one under that name first: for another conversation, another
// session, or a turn long past. Emptying the live history on the strength of such a
// Checkpoint would lose what it does not hold, so the Checkpoint found must be of this
// conversation and hold exactly what the live history holds when it is emptied (a Checkpoint
// taken earlier with nothing appended since holds the same, and is as good).

// finalCheckpointOf reports why ckpt, found under the final Checkpoint's name, is not one of
// conv ("" when its spec is the one the archive asks for).
func finalCheckpointOf(ckpt *parleyv1alpha1.Checkpoint, conv *parleyv1alpha1.Conversation) string {
	switch {
	case ckpt.Spec.ConversationRef.Name != conv.Name:
		return "is a Checkpoint of conversation " + ckpt.Spec.ConversationRef.Name
	case ckpt.Spec.Turn != nil:
		return fmt.Sprintf("snapshots turn %d, not the whole history", *ckpt.Spec.Turn)
	}
	return ""
}

// finalCheckpointHolds reports what the live history holds that ckpt, Ready, does not ("" when
// it holds the same session, messages and last sequence).
func finalCheckpointHolds(ckpt *parleyv1alpha1.Checkpoint, conv *parleyv1alpha1.Conversation, live *conversation.State) string {
	var last int64
	if n := len(live.Messages); n > 0 {
		last = live.Messages[n-1].Seq
	}
	switch {
	case ckpt.Status.SessionID != conv.Status.SessionID:
		return fmt.Sprintf("holds session %s, not %s", ckpt.Status.SessionID, conv.Status.SessionID)
	case ckpt.Status.Messages != int64(len(live.Messages)) || ckpt.Status.Sequence != last:
		return fmt.Sprintf("holds %d messages through sequence %d; the live history holds %d through %d",
			ckpt.Status.Messages, ckpt.Status.Sequence, len(live.Messages), last)
	}
	return ""
}
