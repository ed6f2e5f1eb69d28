package controller

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// claimant is a Conversation named name, created offset after created, pinning pinnedID.
func claimant(name string, offset time.Duration, opts ...func(*parleyv1alpha1.Conversation)) parleyv1alpha1.Conversation {
	c := testConv(append([]func(*parleyv1alpha1.Conversation){func(c *parleyv1alpha1.Conversation) {
		c.Name, c.UID = name, types.UID("uid-"+name)
		c.CreationTimestamp = metav1.NewTime(created.Add(offset))
		c.Spec.SessionID = pinnedID
		c.Spec.History.ConfigMap.Name = "shared"
	}}, opts...)...)
	return *c
}

// minted is a Conversation whose session id the controller minted (none pinned).
func minted(c *parleyv1alpha1.Conversation) {
	c.Spec.SessionID, c.Status.SessionID = "", pinnedID
}

// holding is a Conversation whose history is open.
func holding(c *parleyv1alpha1.Conversation) {
	c.Status.SessionID = c.Spec.SessionID
	c.Status.Conditions = []metav1.Condition{{Type: parleyv1alpha1.ConditionHistoryAvailable, Status: metav1.ConditionTrue, Reason: parleyv1alpha1.ReasonHistoryReady}}
}

// inBucket keeps the history in the bucket "hist" under prefix.
func inBucket(prefix string) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) {
		c.Spec.History = parleyv1alpha1.HistorySpec{ObjectStore: &parleyv1alpha1.ObjectStoreHistory{
			Endpoint: "minio:9000", Bucket: "hist", Prefix: prefix,
		}}
	}
}

func TestHistoryKeyHolder(t *testing.T) {
	tests := map[string]struct {
		conv       parleyv1alpha1.Conversation
		others     []parleyv1alpha1.Conversation
		wantHolder string // "" for none
	}{
		"alone, it keeps its history": {
			conv: claimant("b", time.Second), others: []parleyv1alpha1.Conversation{claimant("b", time.Second)},
		},
		"an earlier Conversation with the same pinned id keeps it": {
			conv:       claimant("b", time.Second),
			others:     []parleyv1alpha1.Conversation{claimant("a", 0), claimant("b", time.Second)},
			wantHolder: "a",
		},
		"the earlier one keeps it though the later pinned an id already in status": {
			conv:       claimant("b", time.Second, withSession(pinnedID)),
			others:     []parleyv1alpha1.Conversation{claimant("a", 0)},
			wantHolder: "a",
		},
		"created in the same second, the name decides": {
			conv:       claimant("b", 0),
			others:     []parleyv1alpha1.Conversation{claimant("a", 0)},
			wantHolder: "a",
		},
		"a minted id is its own: pinning it in the same second with a name sorting first takes nothing": {
			conv:       claimant("a", 0),
			others:     []parleyv1alpha1.Conversation{claimant("b", 0, minted)},
			wantHolder: "b",
		},
		"the Conversation that minted the id keeps it from one that pinned it": {
			conv:   claimant("b", 0, minted),
			others: []parleyv1alpha1.Conversation{claimant("a", 0)},
		},
		"in the same second, the one that already holds the history keeps it": {
			conv:       claimant("a", 0),
			others:     []parleyv1alpha1.Conversation{claimant("b", 0, holding)},
			wantHolder: "b",
		},
		"the earliest of several keeps it": {
			conv:       claimant("c", 2*time.Second),
			others:     []parleyv1alpha1.Conversation{claimant("b", time.Second), claimant("a", 0)},
			wantHolder: "a",
		},
		"a later Conversation takes nothing from an earlier one": {
			conv:   claimant("a", 0),
			others: []parleyv1alpha1.Conversation{claimant("b", time.Second)},
		},
		"the same id in ConfigMaps of another name is another history": {
			conv: claimant("b", time.Second),
			others: []parleyv1alpha1.Conversation{claimant("a", 0, func(c *parleyv1alpha1.Conversation) {
				c.Spec.History.ConfigMap.Name = "other"
			})},
		},
		"the session id's case does not make another history": {
			conv:       claimant("b", time.Second, func(c *parleyv1alpha1.Conversation) { c.Spec.SessionID = strings.ToUpper(pinnedID) }),
			others:     []parleyv1alpha1.Conversation{claimant("a", 0)},
			wantHolder: "a",
		},
		"the same bucket and prefix on another spelling of the endpoint is the same history": {
			conv: claimant("b", time.Second, inBucket("p/"), func(c *parleyv1alpha1.Conversation) {
				c.Spec.History.ObjectStore.Endpoint = "http://minio.storage.svc:9000"
			}),
			others:     []parleyv1alpha1.Conversation{claimant("a", 0, inBucket("p"))},
			wantHolder: "a",
		},
		"another prefix is another history": {
			conv:   claimant("b", time.Second, inBucket("q")),
			others: []parleyv1alpha1.Conversation{claimant("a", 0, inBucket("p"))},
		},
		"an id not pinned yet claims nothing": {
			conv:   claimant("b", time.Second, func(c *parleyv1alpha1.Conversation) { c.Spec.SessionID = "" }),
			others: []parleyv1alpha1.Conversation{claimant("a", 0)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := historyKeyHolder(&tc.conv, tc.others)
			gotName := ""
			if got != nil {
				gotName = got.Name
			}
			if gotName != tc.wantHolder {
				t.Fatalf("holder = %q, want %q", gotName, tc.wantHolder)
			}
		})
	}
}
