package controller

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/parley-dev/parley/pkg/history"
)

// ActivityHandoff is the activity this replica's Session API saw (sessionapi.Activity), handed to
// the reconciler so one status write carries lastActivityTime and the counts it refreshes.
type ActivityHandoff interface {
	// Source wakes the reconcile of a conversation with activity handed over.
	Source() source.Source
	// Take removes and returns the activity handed over for key, with the head this replica's
	// writes of it left the history at when all of them told it (they folded what they wrote
	// into the shared view), nil otherwise.
	Take(key types.NamespacedName) (at time.Time, head *history.Head, ok bool)
	// Restore gives back activity taken whose status write failed.
	Restore(key types.NamespacedName, at time.Time)
}

// applyActivity moves status.lastActivityTime to at when at is later, before the expiry
// decision reads it. Status keeps whole seconds (metav1.Time), so the time is truncated as
// its serialisation would: a write from this reconcile is then compared with what it stores.
func applyActivity(s *conversationScope, at time.Time) {
	at = at.Truncate(time.Second)
	if last := s.status.LastActivityTime; last != nil && !at.After(last.Time) {
		return
	}
	t := metav1.NewTime(at)
	s.status.LastActivityTime = &t
}

// viewHeadToTrust is the head at which the shared view may stand in for a read of the store,
// or nil. Only this replica's own writes, all folded into the view and all telling the head
// they left (head), and only when nothing else has written the object since this controller's
// last reconcile (unchanged): every Session API write on another replica marks the
// conversation active with a status patch, so a write this replica did not see shows as a
// change of the object, and that reconcile reads the store.
func viewHeadToTrust(took bool, head *history.Head, unchanged bool) *history.Head {
	if !took || head == nil || !unchanged {
		return nil
	}
	return head
}
