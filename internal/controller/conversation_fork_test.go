package controller

import (
	"reflect"
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
)

func TestForkOf(t *testing.T) {
	generic := &conversation.GenericAdapterState{AdapterType: "opencode", SessionID: "oc-1", CanResume: true}
	tests := map[string]struct {
		adapters       conversation.AdapterStates
		wantForkedFrom []string // per adapter; "-" for a state that is not Claude's
	}{
		"no adapter state": {},
		"a Claude state records the session it was forked from": {
			adapters:       conversation.AdapterStates{&conversation.ClaudeAgentSDKState{SessionID: "sdk-a", WorkspacePath: "/w"}},
			wantForkedFrom: []string{"sdk-a"},
		},
		"a fork of a fork keeps the first origin": {
			adapters:       conversation.AdapterStates{&conversation.ClaudeAgentSDKState{SessionID: "sdk-b", ForkedFrom: "sdk-a"}},
			wantForkedFrom: []string{"sdk-a"},
		},
		"every Claude state, other adapters untouched": {
			adapters: conversation.AdapterStates{
				&conversation.ClaudeAgentSDKState{SessionID: "sdk-1"}, generic, &conversation.ClaudeAgentSDKState{SessionID: "sdk-2"},
			},
			wantForkedFrom: []string{"sdk-1", "-", "sdk-2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src := conversation.NewState("source-session")
			src.Messages = []conversation.Message{{ID: "m1", Seq: 1, Role: conversation.RoleUser}}
			src.Adapters = tc.adapters
			before := stateBytes(t, &src)

			got := forkOf(src, "new-session")

			if got.SessionID != "new-session" {
				t.Errorf("session %q, want new-session", got.SessionID)
			}
			if !reflect.DeepEqual(got.Messages, src.Messages) {
				t.Errorf("messages changed: %+v", got.Messages)
			}
			if len(got.Adapters) != len(tc.wantForkedFrom) {
				t.Fatalf("%d adapter states, want %d", len(got.Adapters), len(tc.wantForkedFrom))
			}
			for i, want := range tc.wantForkedFrom {
				c, ok := got.Adapters[i].(*conversation.ClaudeAgentSDKState)
				switch {
				case want == "-" && got.Adapters[i] != tc.adapters[i]:
					t.Errorf("adapter %d: another adapter's state was replaced", i)
				case want != "-" && (!ok || c.ForkedFrom != want):
					t.Errorf("adapter %d: %+v, want ForkedFrom %q", i, got.Adapters[i], want)
				case want != "-" && c.SessionID != tc.adapters[i].Session():
					t.Errorf("adapter %d: SDK session changed to %q", i, c.SessionID)
				}
			}
			if after := stateBytes(t, &src); !reflect.DeepEqual(before, after) {
				t.Errorf("the source state was mutated:\n%s\n%s", before, after)
			}
		})
	}
}

// stateBytes encodes the whole state, so a mutation through a shared pointer shows.
func stateBytes(t *testing.T, s *conversation.State) string {
	t.Helper()
	data, err := conversation.MarshalSnapshot(s, conversation.SnapshotMetadata{})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
