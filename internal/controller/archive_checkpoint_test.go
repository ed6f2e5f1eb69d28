package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
)

// A Checkpoint found under the final Checkpoint's name stands for the live history only when
// it is of the conversation, of its whole history, and holds what the live history holds now.
func TestFinalCheckpointMustHoldTheLiveHistory(t *testing.T) {
	conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Status: parleyv1alpha1.ConversationStatus{SessionID: "s1"}}
	live := &conversation.State{Messages: []conversation.Message{{ID: "a", Seq: 3}, {ID: "b", Seq: 7}}}
	turn := int64(1)
	for name, tc := range map[string]struct {
		spec   parleyv1alpha1.CheckpointSpec
		status parleyv1alpha1.CheckpointStatus
		stands bool
	}{
		"the one the archive makes": {
			spec:   parleyv1alpha1.CheckpointSpec{ConversationRef: parleyv1alpha1.ConversationReference{Name: "c"}, Reason: parleyv1alpha1.CheckpointArchive},
			status: parleyv1alpha1.CheckpointStatus{SessionID: "s1", Messages: 2, Sequence: 7}, stands: true,
		},
		"another conversation's": {
			spec:   parleyv1alpha1.CheckpointSpec{ConversationRef: parleyv1alpha1.ConversationReference{Name: "other"}},
			status: parleyv1alpha1.CheckpointStatus{SessionID: "s1", Messages: 2, Sequence: 7},
		},
		"a turn of it": {
			spec:   parleyv1alpha1.CheckpointSpec{ConversationRef: parleyv1alpha1.ConversationReference{Name: "c"}, Turn: &turn},
			status: parleyv1alpha1.CheckpointStatus{SessionID: "s1", Messages: 2, Sequence: 7},
		},
		"another session's": {
			spec:   parleyv1alpha1.CheckpointSpec{ConversationRef: parleyv1alpha1.ConversationReference{Name: "c"}},
			status: parleyv1alpha1.CheckpointStatus{SessionID: "s0", Messages: 2, Sequence: 7},
		},
		"taken before the last message": {
			spec:   parleyv1alpha1.CheckpointSpec{ConversationRef: parleyv1alpha1.ConversationReference{Name: "c"}},
			status: parleyv1alpha1.CheckpointStatus{SessionID: "s1", Messages: 1, Sequence: 3},
		},
	} {
		ckpt := &parleyv1alpha1.Checkpoint{Spec: tc.spec, Status: tc.status}
		why := finalCheckpointOf(ckpt, conv)
		if why == "" {
			why = finalCheckpointHolds(ckpt, conv, live)
		}
		if (why == "") != tc.stands {
			t.Errorf("%s: %q, want it to stand for the live history: %v", name, why, tc.stands)
		}
	}
}
