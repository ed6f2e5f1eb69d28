package controller

import (
	"strings"
	"testing"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
)

// An agent reports its adapter state through the Session API, and stored histories may hold any
// (an import, bytes written to the store): one whose type or session id the API cannot hold
// would make every status write invalid, so status shows none.
func TestLatestAdapterOnlyWhatStatusHolds(t *testing.T) {
	for name, tc := range map[string]struct {
		state conversation.AdapterState
		want  *parleyv1alpha1.AdapterState
	}{
		"fits": {
			state: &conversation.GenericAdapterState{AdapterType: "generic", SessionID: "s-1", CanResume: true},
			want:  &parleyv1alpha1.AdapterState{Type: "generic", SessionID: "s-1", Resumable: true},
		},
		"the longest that fits": {
			state: &conversation.GenericAdapterState{AdapterType: strings.Repeat("t", 64), SessionID: strings.Repeat("s", 256)},
			want:  &parleyv1alpha1.AdapterState{Type: strings.Repeat("t", 64), SessionID: strings.Repeat("s", 256)},
		},
		"a type too long": {
			state: &conversation.GenericAdapterState{AdapterType: strings.Repeat("t", 65), SessionID: "s-1"},
		},
		"a session id too long": {
			state: &conversation.ClaudeAgentSDKState{SessionID: strings.Repeat("s", 257)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := latestAdapter(conversation.AdapterStates{tc.state})
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("latestAdapter = %+v, want %+v", got, tc.want)
			}
		})
	}
}
