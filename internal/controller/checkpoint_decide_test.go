package controller

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/history"
)

// TestDecideCheckpoint: the Checkpoint's status follows from the Conversation and what writing
// the snapshot did, with no I/O of its own; a snapshot is due exactly when the decision would
// otherwise wait for one.
func TestDecideCheckpoint(t *testing.T) {
	historyReady := withCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady)
	unavailable := errors.New("store down")
	for name, tc := range map[string]struct {
		phase    parleyv1alpha1.CheckpointPhase
		conv     *parleyv1alpha1.Conversation
		found    bool
		attempt  snapshotAttempt
		due      bool
		want     parleyv1alpha1.CheckpointPhase
		reason   string
		retryErr bool
	}{
		"conversation missing": {conv: testConv(), want: parleyv1alpha1.CheckpointPending, reason: parleyv1alpha1.ReasonConversationNotFound},
		"history not available": {
			conv: testConv(withSession(mintedID)), found: true,
			want: parleyv1alpha1.CheckpointPending, reason: parleyv1alpha1.ReasonWaitingForHistory,
		},
		"written": {
			conv: testConv(withSession(mintedID), historyReady), found: true, due: true,
			attempt: snapshotAttempt{tried: true, snap: writtenSnapshot{turn: 2, messages: 4, bytes: 100, digest: "sha256:x"}},
			want:    parleyv1alpha1.CheckpointReady, reason: parleyv1alpha1.ReasonSnapshotWritten,
		},
		"turn not reached": {
			conv: testConv(withSession(mintedID), historyReady), found: true, due: true,
			attempt: snapshotAttempt{tried: true, err: journal.ErrTurnNotFound},
			want:    parleyv1alpha1.CheckpointPending, reason: parleyv1alpha1.ReasonTurnNotFound,
		},
		"too large": {
			conv: testConv(withSession(mintedID), historyReady), found: true, due: true,
			attempt: snapshotAttempt{tried: true, err: history.ErrTooLarge},
			want:    parleyv1alpha1.CheckpointFailed, reason: parleyv1alpha1.ReasonHistoryTooLarge,
		},
		"namespace busy: put off without a retry error": {
			conv: testConv(withSession(mintedID), historyReady), found: true, due: true,
			attempt: snapshotAttempt{tried: true, err: errNamespaceBusy},
			want:    parleyv1alpha1.CheckpointPending, reason: parleyv1alpha1.ReasonWaitingForHistory,
		},
		"store unavailable: retried": {
			conv: testConv(withSession(mintedID), historyReady), found: true, due: true,
			attempt: snapshotAttempt{tried: true, err: unavailable},
			want:    parleyv1alpha1.CheckpointPending, reason: parleyv1alpha1.ReasonStoreError, retryErr: true,
		},
		"written once": {
			phase: parleyv1alpha1.CheckpointReady, conv: testConv(withSession(mintedID), historyReady), found: true,
			want: parleyv1alpha1.CheckpointReady,
		},
		"history deleted on expiry": {
			phase: parleyv1alpha1.CheckpointReady, found: true,
			conv: testConv(withSession(mintedID), withCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionFalse, parleyv1alpha1.ReasonHistoryDeleted)),
			want: parleyv1alpha1.CheckpointFailed, reason: parleyv1alpha1.ReasonHistoryGone,
		},
	} {
		t.Run(name, func(t *testing.T) {
			ckpt := &parleyv1alpha1.Checkpoint{Status: parleyv1alpha1.CheckpointStatus{Phase: tc.phase}}
			if got := snapshotDue(ckpt, tc.conv, tc.found); got != tc.due {
				t.Fatalf("snapshotDue = %v, want %v", got, tc.due)
			}
			st, err := decideCheckpoint(ckpt, tc.conv, tc.found, tc.attempt)
			if st.Phase != tc.want || (err != nil) != tc.retryErr {
				t.Fatalf("phase %q, error %v; want %q, retry %v", st.Phase, err, tc.want, tc.retryErr)
			}
			if tc.reason != "" {
				if c := meta.FindStatusCondition(st.Conditions, parleyv1alpha1.ConditionReady); c == nil || c.Reason != tc.reason {
					t.Fatalf("Ready condition %+v, want reason %s", c, tc.reason)
				}
			}
		})
	}
}
