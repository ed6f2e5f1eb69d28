package session

import (
	"encoding/json"
	"maps"
	"sync"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// OwnWrites remembers the Conversation controller's own status writes, for two uses (the
// package documentation walks both): the watch event each write causes is dropped, so it does
// not wake a reconcile of what that very reconcile decided (one reconcile per change instead
// of two; docs/benchmarks.md has the scale figures), and UnchangedSince tells a reconcile that
// no one else has written the object since, the condition for trusting the shared view.
//
// A write is noted before it is sent (its watch event may arrive before the response), as the
// resourceVersion it is based on and the status it sets. Only an update event that is exactly
// that write is dropped: from that resourceVersion, with nothing but the status changed, to
// that status. The write carries an optimistic lock on its base, so no other change can hide
// in between; any other change (a spec or metadata edit, the Session API's activity, a relist
// that folds several changes into one event) differs and passes.
//
// A reconcile that starts before the cache holds the write (woken by a pod, say) decides from
// the object as it was before the write, and may write nothing, so nothing tells it its view
// was stale: it forgets the noted write (ReconcileStarts), and the write's event wakes the
// reconcile that sees both.
type OwnWrites struct {
	mu     sync.Mutex
	writes map[types.NamespacedName]ownWrite
	// last is the resourceVersion each object had after this controller's last reconcile
	// (written or found current), until an error or a delete makes it unknown.
	last map[types.NamespacedName]string
}

type ownWrite struct {
	base, written string
	status        *parleyv1alpha1.ConversationStatus
}

// Note records that the controller is about to write status on top of base.
func (w *OwnWrites) Note(base *parleyv1alpha1.Conversation, status *parleyv1alpha1.ConversationStatus) {
	if base.ResourceVersion == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.writes == nil {
		w.writes = map[types.NamespacedName]ownWrite{}
	}
	w.writes[client.ObjectKeyFromObject(base)] = ownWrite{base: base.ResourceVersion, status: asStored(status)}
}

// asStored is status as the API server stores it and the watch delivers it: times in whole
// seconds (metav1.Time's JSON), where the reconcile set them with nanoseconds (a condition's
// transition time). Compared as built, our own write's event never matched.
func asStored(status *parleyv1alpha1.ConversationStatus) *parleyv1alpha1.ConversationStatus {
	out := &parleyv1alpha1.ConversationStatus{}
	data, err := json.Marshal(status)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		return status.DeepCopy() // cannot happen for a status that encodes; compare as built
	}
	return out
}

// Wrote records the resourceVersion the reconcile's status write produced (or, when status
// did not change, the one it read).
func (w *OwnWrites) Wrote(key types.NamespacedName, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[types.NamespacedName]string{}
	}
	w.last[key] = rv
	if got, ok := w.writes[key]; ok {
		got.written = rv
		w.writes[key] = got
	}
}

// ReconcileStarts forgets the noted write of key unless the reconcile read the object as that
// write left it: a reconcile from an older copy must not have the write's event dropped.
func (w *OwnWrites) ReconcileStarts(key types.NamespacedName, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if got, ok := w.writes[key]; ok && got.written != rv {
		delete(w.writes, key)
	}
}

// Forget drops what is known of key: its status write failed, or the object was deleted.
func (w *OwnWrites) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.writes, key)
	delete(w.last, key)
}

// UnchangedSince tells whether the object at rv is as this controller's last reconcile left it:
// no one (the Session API's activity included) has written it since.
func (w *OwnWrites) UnchangedSince(key types.NamespacedName, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.last[key]
	return ok && rv != "" && last == rv
}

// consume tells whether the update from prev to cur is a noted write, forgetting it when so.
func (w *OwnWrites) consume(prev, cur *parleyv1alpha1.Conversation) bool {
	key := client.ObjectKeyFromObject(cur)
	w.mu.Lock()
	defer w.mu.Unlock()
	got, ok := w.writes[key]
	if !ok || got.base != prev.ResourceVersion || !onlyStatusChanged(prev, cur) ||
		!apiequality.Semantic.DeepEqual(got.status, &cur.Status) {
		return false
	}
	delete(w.writes, key)
	return true
}

// onlyStatusChanged compares what a status write cannot change; managedFields and the
// resourceVersion change with every write and are left out.
func onlyStatusChanged(prev, cur *parleyv1alpha1.Conversation) bool {
	return prev.Generation == cur.Generation && prev.UID == cur.UID &&
		prev.DeletionTimestamp.Equal(cur.DeletionTimestamp) &&
		maps.Equal(prev.Labels, cur.Labels) && maps.Equal(prev.Annotations, cur.Annotations) &&
		apiequality.Semantic.DeepEqual(prev.Finalizers, cur.Finalizers) &&
		apiequality.Semantic.DeepEqual(prev.OwnerReferences, cur.OwnerReferences)
}

// Predicate drops the update events of noted writes; every other event passes.
func (w *OwnWrites) Predicate() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			prev, ok1 := e.ObjectOld.(*parleyv1alpha1.Conversation)
			cur, ok2 := e.ObjectNew.(*parleyv1alpha1.Conversation)
			return !ok1 || !ok2 || !w.consume(prev, cur)
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			if e.Object != nil {
				w.Forget(client.ObjectKeyFromObject(e.Object))
			}
			return true
		},
	}
}
