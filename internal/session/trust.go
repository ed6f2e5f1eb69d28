package session

import "github.com/parley-dev/parley/pkg/history"

// ViewHeadToTrust is the head at which the shared view may stand in for a read of the store,
// or nil. Only this replica's own writes, all telling the head they left (head, from
// Activity.Take: nil when no activity was taken or a write of it told no head), and only when
// nothing else has written the object since the controller's last reconcile (unchanged, from
// OwnWrites.UnchangedSince): every Session API write on another replica marks the
// conversation active with a status patch, so a write this replica did not see shows as a
// change of the object, and that reconcile reads the store. The view stands in only once it
// stands at that head (Live.Reached).
func ViewHeadToTrust(head *history.Head, unchanged bool) *history.Head {
	if head == nil || !unchanged {
		return nil
	}
	return head
}
