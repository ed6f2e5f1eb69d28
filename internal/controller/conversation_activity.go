package controller

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ActivityHandoff is the activity this replica's Session API saw (sessionapi.Activity), handed to
// the reconciler so one status write carries lastActivityTime and the counts it refreshes.
type ActivityHandoff interface {
	// Source wakes the reconcile of a conversation with activity handed over.
	Source() source.Source
	// Take removes and returns the activity handed over for key.
	Take(key types.NamespacedName) (time.Time, bool)
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
