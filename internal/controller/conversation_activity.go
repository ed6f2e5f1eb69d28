package controller

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// applyActivity moves status.lastActivityTime to at when at is later, before the expiry
// decision reads it. Status keeps whole seconds (metav1.Time), so the time is truncated as
// its serialisation would: a write from this reconcile is then compared with what it stores.
func applyActivity(s *conversationScope, at time.Time) {
	if at.After(s.activityAt) {
		s.activityAt = at
	}
	at = at.Truncate(time.Second)
	if last := s.status.LastActivityTime; last != nil && !at.After(last.Time) {
		return
	}
	t := metav1.NewTime(at)
	s.status.LastActivityTime = &t
}
