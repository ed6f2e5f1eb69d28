package controller

import (
	"context"
	"errors"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// checkpointConversationIndex indexes Checkpoints by the Conversation they name, so a
// Conversation event wakes exactly its Checkpoints.
const checkpointConversationIndex = "spec.conversationRef.name"

// SnapshotFinalizer is on every Checkpoint with a stored snapshot: deleting the Checkpoint
// removes the snapshot unless another Checkpoint of the session shares its digest.
const SnapshotFinalizer = "parley.dev/snapshot"

// CheckpointReconciler writes a Checkpoint's snapshot once: the conversation at spec.turn (or
// its latest complete turn) through pkg/conversation's snapshot format into the history's
// content-addressed checkpoint store, read back and verified before the Checkpoint is Ready.
// A Checkpoint is owned by its Conversation and does not outlive it: its snapshot lives in the
// conversation's history, which goes with the Conversation. Fork a conversation to keep it.
type CheckpointReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	// Sessions opens the conversations' histories and their shared views.
	Sessions *session.Sessions
	// MaxConcurrentReconciles bounds parallel reconciles (1 when zero). Several Checkpoints
	// of one conversation may be written at once: each snapshot is read from the shared
	// view under its lock and stored under its own digest.
	MaxConcurrentReconciles int
	// HistoryGate bounds the reconciles of one namespace that wait on an object store history
	// at once; the ConversationReconciler's, so the bound is on the namespace's total. Nil: a
	// gate of its own with HistoryIOPerNamespace's default.
	HistoryGate *NamespaceGate
}

// The Checkpoint controller caches Checkpoints and Conversations, patches its finalizer and
// controller reference onto a Checkpoint, and writes status with an update.
// +kubebuilder:rbac:groups=parley.dev,resources=checkpoints,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=parley.dev,resources=checkpoints/status,verbs=update
// +kubebuilder:rbac:groups=parley.dev,resources=conversations,verbs=get;list;watch

// Reconcile writes the snapshot of a new Checkpoint, or removes it when the Checkpoint goes.
func (r *CheckpointReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ckpt := &parleyv1alpha1.Checkpoint{}
	if err := r.Get(ctx, req.NamespacedName, ckpt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	conv := &parleyv1alpha1.Conversation{}
	convKey := types.NamespacedName{Namespace: ckpt.Namespace, Name: ckpt.Spec.ConversationRef.Name}
	err := r.Get(ctx, convKey, conv)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("reading Conversation %s: %w", convKey, err)
	}
	found := err == nil && conv.DeletionTimestamp.IsZero()

	if !ckpt.DeletionTimestamp.IsZero() {
		err := r.finalize(ctx, ckpt, conv, found)
		if errors.Is(err, errNamespaceBusy) {
			return ctrl.Result{RequeueAfter: busyHistoryRecheck}, nil
		}
		return ctrl.Result{}, err
	}
	if found {
		if wrote, err := r.adopt(ctx, ckpt, conv); err != nil || wrote {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	before := ckpt.DeepCopy()
	var attempt snapshotAttempt
	if snapshotDue(ckpt, conv, found) {
		snap, err := r.writeSnapshotGated(ctx, ckpt, conv)
		attempt = snapshotAttempt{tried: true, snap: snap, err: err}
		countSnapshot(ckpt.Spec.GetReason(), attempt)
	}
	ckpt.Status, err = decideCheckpoint(ckpt, conv, found, attempt)
	if perr := WriteStatus(ctx, r.Client, before, ckpt, checkpointStatus); perr != nil {
		if errors.Is(perr, ErrStatusConflict) {
			return ctrl.Result{RequeueAfter: conflictRetryDelay}, nil
		}
		return ctrl.Result{}, perr
	}
	if ckpt.Status.Phase != before.Status.Phase {
		r.announce(ckpt)
	}
	if readPutOff(attempt.err) {
		r.snapshotDeferred(ckpt, conv, attempt.err)
		return ctrl.Result{RequeueAfter: busyHistoryRecheck}, nil
	}
	return ctrl.Result{}, err
}

// writeSnapshotGated writes the snapshot in one of the namespace's history I/O slots, or puts
// it off (errNamespaceBusy) when they are taken.
func (r *CheckpointReconciler) writeSnapshotGated(ctx context.Context, ckpt *parleyv1alpha1.Checkpoint, conv *parleyv1alpha1.Conversation) (writtenSnapshot, error) {
	leave, err := enterHistoryIO(r.HistoryGate, conv)
	if err != nil {
		return writtenSnapshot{}, err
	}
	defer leave()
	return r.writeSnapshot(ctx, ckpt, conv)
}

// snapshotDeferred announces a snapshot put off for want of room on this replica (readPutOff);
// it is tried again after busyHistoryRecheck, not with the workqueue's backoff, which would
// start at milliseconds and find the same slots taken.
func (r *CheckpointReconciler) snapshotDeferred(ckpt *parleyv1alpha1.Checkpoint, conv *parleyv1alpha1.Conversation, cause error) {
	reason, msg := putOff(cause)
	metrics.StoreErrors.WithLabelValues(backendOf(conv), reason).Inc()
	if r.Recorder != nil {
		r.Recorder.Eventf(ckpt, nil, corev1.EventTypeWarning, parleyv1alpha1.EventHistoryReadDeferred, "Snapshot", "%s", msg)
	}
}

func checkpointStatus(c *parleyv1alpha1.Checkpoint) any { return c.Status }

// adopt puts the snapshot finalizer and the Conversation's owner reference on the Checkpoint
// (one metadata patch), so it is garbage-collected with the Conversation.
func (r *CheckpointReconciler) adopt(ctx context.Context, ckpt *parleyv1alpha1.Checkpoint, conv *parleyv1alpha1.Conversation) (bool, error) {
	owned := metav1.IsControlledBy(ckpt, conv)
	if owned && controllerutil.ContainsFinalizer(ckpt, SnapshotFinalizer) {
		return false, nil
	}
	patch := client.MergeFrom(ckpt.DeepCopy())
	controllerutil.AddFinalizer(ckpt, SnapshotFinalizer)
	if !owned && metav1.GetControllerOf(ckpt) == nil {
		if err := controllerutil.SetControllerReference(conv, ckpt, r.Scheme); err != nil {
			return false, err
		}
	}
	if err := r.Patch(ctx, ckpt, patch); err != nil {
		return false, fmt.Errorf("adopting Checkpoint %s/%s: %w", ckpt.Namespace, ckpt.Name, err)
	}
	return true, nil
}

// snapshotAttempt is what writing the snapshot did, when it was due.
type snapshotAttempt struct {
	tried bool
	snap  writtenSnapshot
	err   error
}

// snapshotDue: the Checkpoint has no snapshot yet, and its conversation's history can be read.
func snapshotDue(ckpt *parleyv1alpha1.Checkpoint, conv *parleyv1alpha1.Conversation, found bool) bool {
	hist := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
	return ckpt.Status.Phase != parleyv1alpha1.CheckpointReady && ckpt.Status.Phase != parleyv1alpha1.CheckpointFailed &&
		found && hist != nil && hist.Status == metav1.ConditionTrue
}

// countSnapshot counts a snapshot written or failed; a turn not reached yet, or a snapshot put
// off (readPutOff), is neither.
func countSnapshot(reason parleyv1alpha1.CheckpointReason, a snapshotAttempt) {
	switch {
	case a.err == nil:
		metrics.Snapshots.WithLabelValues(string(reason), "written").Inc()
		metrics.SnapshotBytes.Observe(float64(a.snap.bytes))
	case !errors.Is(a.err, journal.ErrTurnNotFound) && !readPutOff(a.err):
		metrics.Snapshots.WithLabelValues(string(reason), "failed").Inc()
	}
}

// decideCheckpoint computes the Checkpoint's status from the Conversation and, when the
// snapshot was due (snapshotDue), what writing it did. The returned error, if any, asks for a
// retry with backoff after the status is written.
func decideCheckpoint(ckpt *parleyv1alpha1.Checkpoint, conv *parleyv1alpha1.Conversation, found bool, attempt snapshotAttempt) (parleyv1alpha1.CheckpointStatus, error) {
	st := *ckpt.Status.DeepCopy()
	st.ObservedGeneration = ckpt.Generation
	set := func(status metav1.ConditionStatus, phase parleyv1alpha1.CheckpointPhase, reason, msg string) {
		st.Phase = phase
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: parleyv1alpha1.ConditionReady, Status: status,
			Reason: reason, Message: msg, ObservedGeneration: ckpt.Generation,
		})
	}
	hist := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
	switch {
	case st.Phase == parleyv1alpha1.CheckpointReady && found && hist != nil && hist.Reason == parleyv1alpha1.ReasonHistoryDeleted:
		set(metav1.ConditionFalse, parleyv1alpha1.CheckpointFailed, parleyv1alpha1.ReasonHistoryGone,
			"the conversation's history, and this snapshot with it, was deleted on expiry (expirationPolicy Delete)")
		return st, nil
	case st.Phase == parleyv1alpha1.CheckpointReady || st.Phase == parleyv1alpha1.CheckpointFailed:
		return st, nil // a checkpoint is a fact about the past: written once
	case !found:
		set(metav1.ConditionFalse, parleyv1alpha1.CheckpointPending, parleyv1alpha1.ReasonConversationNotFound,
			fmt.Sprintf("Conversation %q not found in namespace %q; the checkpoint waits for it", ckpt.Spec.ConversationRef.Name, ckpt.Namespace))
		return st, nil
	case hist == nil || hist.Status != metav1.ConditionTrue || !attempt.tried: // not snapshotDue
		set(metav1.ConditionFalse, parleyv1alpha1.CheckpointPending, parleyv1alpha1.ReasonWaitingForHistory,
			"waiting for the conversation's history to be available")
		return st, nil
	}
	st.SessionID = conv.Status.SessionID

	err, snap := attempt.err, attempt.snap
	switch {
	case errors.Is(err, journal.ErrTurnNotFound):
		set(metav1.ConditionFalse, parleyv1alpha1.CheckpointPending, parleyv1alpha1.ReasonTurnNotFound, err.Error()+"; the checkpoint waits for it")
		return st, nil
	case readPutOff(err): // nothing is known to be wrong with the history: tried again shortly
		set(metav1.ConditionFalse, parleyv1alpha1.CheckpointPending, parleyv1alpha1.ReasonWaitingForHistory,
			"the snapshot was put off: "+err.Error())
		return st, nil
	case errors.Is(err, history.ErrTooLarge), errors.Is(err, history.ErrCorrupt), errors.Is(err, conversation.ErrSnapshotCorrupt):
		set(metav1.ConditionFalse, parleyv1alpha1.CheckpointFailed, historystore.Reason(err), err.Error())
		return st, nil
	case err != nil:
		set(metav1.ConditionFalse, parleyv1alpha1.CheckpointPending, historystore.Reason(err), historystore.Message(err))
		return st, err
	}
	st.Turn, st.Sequence, st.Messages, st.Tokens, st.Bytes = snap.turn, snap.sequence, snap.messages, snap.tokens, snap.bytes
	st.Digest, st.Location, st.AdapterState = string(snap.digest), snap.location, snap.adapter
	set(metav1.ConditionTrue, parleyv1alpha1.CheckpointReady, parleyv1alpha1.ReasonSnapshotWritten,
		fmt.Sprintf("snapshot of turn %d (%d messages, %d bytes) stored and verified", snap.turn, snap.messages, snap.bytes))
	return st, nil
}

// writtenSnapshot describes a stored, verified snapshot.
type writtenSnapshot struct {
	turn, sequence, messages, tokens, bytes int64
	digest                                  history.Digest
	location                                string
	adapter                                 *parleyv1alpha1.AdapterState
}

// writeSnapshot cuts the conversation at the Checkpoint's turn, stores the snapshot (content
// addressed: a retry stores the same bytes once, since createdAt is the Checkpoint's own
// creation time) and reads it back through the digest check before reporting it.
func (r *CheckpointReconciler) writeSnapshot(ctx context.Context, ckpt *parleyv1alpha1.Checkpoint, conv *parleyv1alpha1.Conversation) (writtenSnapshot, error) {
	var out writtenSnapshot
	live, err := r.Sessions.Open(ctx, conv, false)
	if err != nil {
		return out, err
	}
	h := live.History()
	var data []byte
	err = live.With(ctx, func(v *journal.View) error {
		turn := 0
		if ckpt.Spec.Turn != nil {
			turn = int(min(*ckpt.Spec.Turn, math.MaxInt32))
		}
		state, cut := v.State, v.Turns
		reason := ckpt.Spec.GetReason()
		whole := reason == parleyv1alpha1.CheckpointArchive || reason == parleyv1alpha1.CheckpointReset
		if !whole || turn != 0 {
			// An Archive or Reset checkpoint keeps everything, even a turn still waiting for a
			// tool: what it does not hold, the reset keeps in the history.
			if state, cut, err = journal.Cut(&v.State, turn); err != nil {
				return err
			}
		}
		data, err = conversation.MarshalSnapshot(&state, conversation.SnapshotMetadata{
			CreatedAt: ckpt.CreationTimestamp.UTC(), Checkpoint: ckpt.Name, Turn: cut,
		})
		if err != nil {
			return err
		}
		out.turn, out.messages = int64(cut), int64(len(state.Messages))
		if n := len(state.Messages); n > 0 {
			out.sequence = state.Messages[n-1].Seq
		}
		out.tokens = int64(v.TokensOf(&state))
		out.adapter = latestAdapter(state.Adapters)
		return nil
	})
	if err != nil {
		return out, err
	}
	digest, err := h.PutCheckpoint(ctx, data)
	if err != nil {
		return out, err
	}
	stored, err := h.GetCheckpoint(ctx, digest)
	if err != nil {
		return out, err
	}
	if _, err := conversation.UnmarshalSnapshot(stored); err != nil {
		return out, err
	}
	out.digest, out.bytes = digest, int64(len(data))
	out.location = historystore.Location(conv) + "#" + string(digest)
	return out, nil
}

func (r *CheckpointReconciler) announce(ckpt *parleyv1alpha1.Checkpoint) {
	c := meta.FindStatusCondition(ckpt.Status.Conditions, parleyv1alpha1.ConditionReady)
	if c == nil || r.Recorder == nil {
		return
	}
	switch ckpt.Status.Phase {
	case parleyv1alpha1.CheckpointReady:
		r.Recorder.Eventf(ckpt, nil, corev1.EventTypeNormal, parleyv1alpha1.EventSnapshotWritten, "Snapshot", "%s", c.Message)
	case parleyv1alpha1.CheckpointFailed:
		r.Recorder.Eventf(ckpt, nil, corev1.EventTypeWarning, parleyv1alpha1.EventSnapshotFailed, "Snapshot", "%s", c.Message)
	}
}

// finalize removes a deleted Checkpoint's snapshot unless another live Checkpoint of the same
// session holds the same digest, then releases the finalizer. When the Conversation is gone
// its history goes with it, so there is nothing to remove.
func (r *CheckpointReconciler) finalize(ctx context.Context, ckpt *parleyv1alpha1.Checkpoint, conv *parleyv1alpha1.Conversation, found bool) error {
	if !controllerutil.ContainsFinalizer(ckpt, SnapshotFinalizer) {
		return nil
	}
	digest := history.Digest(ckpt.Status.Digest)
	if found && digest != "" && conv.Status.SessionID == ckpt.Status.SessionID {
		shared, err := r.digestShared(ctx, ckpt)
		if err != nil {
			return err
		}
		if !shared {
			leave, err := enterHistoryIO(r.HistoryGate, conv)
			if err != nil {
				return err // the namespace's slots are taken: Reconcile looks again shortly
			}
			defer leave()
			if err := r.deleteSnapshot(ctx, conv, digest); err != nil {
				return err
			}
		}
	}
	patch := client.MergeFrom(ckpt.DeepCopy())
	controllerutil.RemoveFinalizer(ckpt, SnapshotFinalizer)
	if err := r.Patch(ctx, ckpt, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing finalizer from Checkpoint %s/%s: %w", ckpt.Namespace, ckpt.Name, err)
	}
	return nil
}

func (r *CheckpointReconciler) digestShared(ctx context.Context, ckpt *parleyv1alpha1.Checkpoint) (bool, error) {
	list := &parleyv1alpha1.CheckpointList{}
	if err := r.List(ctx, list, client.InNamespace(ckpt.Namespace),
		client.MatchingFields{checkpointConversationIndex: ckpt.Spec.ConversationRef.Name}); err != nil {
		return false, err
	}
	for _, other := range list.Items {
		if other.UID != ckpt.UID && other.DeletionTimestamp.IsZero() &&
			other.Status.Digest == ckpt.Status.Digest && other.Status.SessionID == ckpt.Status.SessionID {
			return true, nil
		}
	}
	return false, nil
}

// deleteSnapshot removes one stored checkpoint, keeping every epoch and other checkpoint.
func (r *CheckpointReconciler) deleteSnapshot(ctx context.Context, conv *parleyv1alpha1.Conversation, digest history.Digest) error {
	live, err := r.Sessions.Open(ctx, conv, false)
	if errors.Is(err, history.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return live.History().Retain(ctx, history.Retention{
		KeepEpochs:     math.MaxInt32,
		KeepCheckpoint: func(d history.Digest) bool { return d != digest },
	})
}

// SetupIndexes registers the field indexes both controllers use. Call it once per manager,
// before setting up the controllers.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &parleyv1alpha1.Checkpoint{}, checkpointConversationIndex,
		func(o client.Object) []string {
			return []string{o.(*parleyv1alpha1.Checkpoint).Spec.ConversationRef.Name}
		}); err != nil {
		return fmt.Errorf("indexing checkpoints by conversation: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, agentPodNodeIndex,
		func(o client.Object) []string {
			if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
				return []string{n}
			}
			return nil
		}); err != nil {
		return fmt.Errorf("indexing agent pods by node: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &parleyv1alpha1.Conversation{}, historySessionIndex, indexHistorySession); err != nil {
		return fmt.Errorf("indexing conversations by session id: %w", err)
	}
	return nil
}

// SetupWithManager sets up the controller with the Manager. Call SetupIndexes first.
func (r *CheckpointReconciler) SetupWithManager(mgr ctrl.Manager) error {
	workers := max(r.MaxConcurrentReconciles, 1)
	if r.HistoryGate == nil {
		r.HistoryGate = NewNamespaceGate(HistoryIOPerNamespace(workers, 0))
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&parleyv1alpha1.Checkpoint{}).
		Watches(&parleyv1alpha1.Conversation{}, handler.EnqueueRequestsFromMapFunc(r.checkpointsOf)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Named("checkpoint").
		Complete(r)
}

// checkpointsOf maps a Conversation to the Checkpoints that name it.
func (r *CheckpointReconciler) checkpointsOf(ctx context.Context, o client.Object) []reconcile.Request {
	list := &parleyv1alpha1.CheckpointList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{checkpointConversationIndex: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
