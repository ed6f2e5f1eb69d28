package session

import (
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// TestViewHeadToTrust: the view stands in for a read of the store only for activity this
// replica handed over with the head its writes left, and only when nothing else wrote the
// Conversation since this controller's last reconcile (another replica's activity patch would
// have: its appends are not in the view).
func TestViewHeadToTrust(t *testing.T) {
	head := &history.Head{Epoch: 1, Sequence: 9}
	for _, tc := range []struct {
		name      string
		head      *history.Head
		unchanged bool
		trust     bool
	}{
		{"own appends, nothing else since", head, true, true},
		{"another writer patched the object", head, false, false},
		{"no activity handed over, or a write that told no head", nil, true, false},
	} {
		got := ViewHeadToTrust(tc.head, tc.unchanged)
		if (got != nil) != tc.trust {
			t.Errorf("%s: %v, want trust %v", tc.name, got, tc.trust)
		}
	}
}
