package session

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

func convAt(rv string, mutate ...func(*parleyv1alpha1.Conversation)) *parleyv1alpha1.Conversation {
	c := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: rv, Generation: 1}}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func ownSession(id string) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) { c.Status.SessionID = id }
}

func TestOwnWritesDropOnlyTheWriteItself(t *testing.T) {
	written := ownSession("s1")
	cases := []struct {
		name     string
		noted    bool
		old, new *parleyv1alpha1.Conversation
		wakes    bool
	}{
		{"the event of our write", true, convAt("10"), convAt("11", written), false},
		{"no write noted", false, convAt("10"), convAt("11", written), true},
		{"another status than ours (the Session API's activity)", true, convAt("10"), convAt("11", ownSession("s1"), func(c *parleyv1alpha1.Conversation) {
			c.Status.LastActivityTime = &metav1.Time{}
		}), true},
		{"a change on top of our write", true, convAt("11", written), convAt("12", written), true},
		{"a relist folding a spec change with our write", true, convAt("10"), convAt("12", written, func(c *parleyv1alpha1.Conversation) { c.Generation = 2 }), true},
		{"an annotation with our status", true, convAt("10"), convAt("11", written, func(c *parleyv1alpha1.Conversation) {
			c.Annotations = map[string]string{"parley.dev/compact-requested-at": "now"}
		}), true},
		{"deletion requested", true, convAt("10"), convAt("11", written, func(c *parleyv1alpha1.Conversation) { c.DeletionTimestamp = &metav1.Time{} }), true},
		{"finalizers changed", true, convAt("10"), convAt("11", written, func(c *parleyv1alpha1.Conversation) { c.Finalizers = []string{"x"} }), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w OwnWrites
			if tc.noted {
				w.Note(convAt("10"), &convAt("", written).Status)
			}
			got := w.Predicate().Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new})
			if got != tc.wakes {
				t.Fatalf("wakes a reconcile: %v, want %v", got, tc.wakes)
			}
		})
	}
}

func TestOwnWritesAreForgottenOnceSeen(t *testing.T) {
	var w OwnWrites
	written := ownSession("s1")
	w.Note(convAt("10"), &convAt("", written).Status)
	p := w.Predicate()
	ev := event.UpdateEvent{ObjectOld: convAt("10"), ObjectNew: convAt("11", written)}
	if p.Update(ev) {
		t.Fatal("the event of our own write woke a reconcile")
	}
	if !p.Update(ev) {
		t.Fatal("a second event of the same write was dropped too: the write was not forgotten")
	}
	w.Note(convAt("11", written), &convAt("", ownSession("s2")).Status)
	if !p.Delete(event.DeleteEvent{Object: convAt("12")}) {
		t.Fatal("a delete event was dropped")
	}
	if len(w.writes) != 0 {
		t.Fatal("a deleted object's noted write was kept")
	}
	w.Note(convAt(""), &convAt("").Status)
	if len(w.writes) != 0 {
		t.Fatal("a write without a base version was noted")
	}
}

// A reconcile between the write and its event that read the object from before the write
// (the cache was behind) decided from stale status: the write's event must wake another.
func TestOwnWritesKeptOnlyForAReconcileThatSawTheWrite(t *testing.T) {
	written := ownSession("s1")
	key := client.ObjectKeyFromObject(convAt("10"))
	ev := event.UpdateEvent{ObjectOld: convAt("10"), ObjectNew: convAt("11", written)}
	for _, tc := range []struct {
		name    string
		readsRV string
		wakes   bool
	}{
		{"a reconcile read the copy from before the write", "10", true},
		{"a reconcile read the copy the write left", "11", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w OwnWrites
			w.Note(convAt("10"), &convAt("", written).Status)
			w.Wrote(key, "11")
			w.ReconcileStarts(key, tc.readsRV)
			if got := w.Predicate().Update(ev); got != tc.wakes {
				t.Fatalf("the write's event wakes a reconcile: %v, want %v", got, tc.wakes)
			}
		})
	}
}

// UnchangedSince knows the resourceVersion this controller's last reconcile left, and forgets
// it on a failed write or a delete.
func TestOwnWritesUnchangedSince(t *testing.T) {
	var w OwnWrites
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	if w.UnchangedSince(key, "5") {
		t.Fatal("unchanged before any reconcile")
	}
	w.Wrote(key, "5")
	if !w.UnchangedSince(key, "5") || w.UnchangedSince(key, "6") || w.UnchangedSince(key, "") {
		t.Fatal("UnchangedSince does not compare with the last resourceVersion")
	}
	w.Forget(key)
	if w.UnchangedSince(key, "5") {
		t.Fatal("still unchanged after forget")
	}
}

// A write that sets a condition carries its transition time with nanoseconds; the object the
// watch delivers has it in whole seconds (metav1.Time's JSON). It is still our write: one
// reconcile per expiry, not two (the scale benchmark counted 2.56 per expiry).
func TestOwnWritesRecogniseAConditionTransition(t *testing.T) {
	at := time.Date(2026, 11, 25, 17, 15, 0, 123456789, time.UTC)
	var w OwnWrites
	status := convAt("").Status
	status.Conditions = []metav1.Condition{{
		Type: parleyv1alpha1.ConditionExpired, Status: metav1.ConditionTrue,
		Reason: parleyv1alpha1.ReasonTTLExceeded, LastTransitionTime: metav1.NewTime(at),
	}}
	w.Note(convAt("10"), &status)
	delivered := convAt("11", func(c *parleyv1alpha1.Conversation) {
		c.Status.Conditions = []metav1.Condition{{
			Type: parleyv1alpha1.ConditionExpired, Status: metav1.ConditionTrue,
			Reason: parleyv1alpha1.ReasonTTLExceeded, LastTransitionTime: metav1.NewTime(at.Truncate(time.Second)),
		}}
	})
	if w.Predicate().Update(event.UpdateEvent{ObjectOld: convAt("10"), ObjectNew: delivered}) {
		t.Fatal("our own condition transition woke a reconcile")
	}
}
