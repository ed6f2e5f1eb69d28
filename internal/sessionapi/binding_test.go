package sessionapi

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// TestPodBindingByUID: a token bound to a pod reaches a conversation only when the pod is the
// one Parley created for it, by UID; a pod with the agent pod's name and another UID (a
// squatter, or one made after the agent pod was deleted) is refused.
func TestPodBindingByUID(t *testing.T) {
	conv := func(name, uid string) *parleyv1alpha1.Conversation {
		c := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
		if name != "" {
			c.Status.Agent = &parleyv1alpha1.AgentStatus{PodName: name, PodUID: uid}
		}
		return c
	}
	for _, tc := range []struct {
		name    string
		caller  caller
		conv    *parleyv1alpha1.Conversation
		allowed bool
	}{
		{"the agent pod", caller{podKey: "ns/c-agent-1", podUID: "u1"}, conv("c-agent-1", "u1"), true},
		{"same name, another UID", caller{podKey: "ns/c-agent-1", podUID: "u2"}, conv("c-agent-1", "u1"), false},
		{"same name, no UID in the token", caller{podKey: "ns/c-agent-1"}, conv("c-agent-1", "u1"), false},
		{"no UID recorded yet", caller{podKey: "ns/c-agent-1", podUID: "u1"}, conv("c-agent-1", ""), false},
		{"another pod", caller{podKey: "ns/c-agent-2", podUID: "u1"}, conv("c-agent-1", "u1"), false},
		{"another namespace", caller{podKey: "other/c-agent-1", podUID: "u1"}, conv("c-agent-1", "u1"), false},
		{"no agent pod", caller{podKey: "ns/c-agent-1", podUID: "u1"}, conv("", ""), false},
		{"a token not bound to a pod", caller{}, conv("c-agent-1", "u1"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := checkPodBinding(&tc.caller, tc.conv)
			switch {
			case tc.allowed && p != nil:
				t.Errorf("refused (%d %s), want allowed", p.Status, p.Detail)
			case !tc.allowed && (p == nil || p.Status != 403):
				t.Errorf("%v, want 403", p)
			}
		})
	}
}
