package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
)

// HistoryFinalizer is on every Conversation whose history lives outside the cluster (objectStore):
// deleting the Conversation first deletes its objects. ConfigMap histories need none: their
// ConfigMaps carry an owner reference and the garbage collector removes them.
const HistoryFinalizer = "parley.dev/history"

// AnnotationSkipHistoryCleanup, set to "true" on a Conversation being deleted, releases the
// finalizer without deleting the external history: the escape hatch when the store or its
// Secret is gone for good (e.g. a namespace deleted with the Secret first).
const AnnotationSkipHistoryCleanup = "parley.dev/skip-history-cleanup"

func needsHistoryFinalizer(conv *parleyv1alpha1.Conversation) bool {
	return conv.Spec.History.ObjectStore != nil
}

// ensureFinalizer adds the history finalizer before anything is written outside the cluster.
// It reports whether it wrote the object (the update wakes the next reconcile).
func (r *ConversationReconciler) ensureFinalizer(ctx context.Context, conv *parleyv1alpha1.Conversation) (bool, error) {
	if !needsHistoryFinalizer(conv) || controllerutil.ContainsFinalizer(conv, HistoryFinalizer) {
		return false, nil
	}
	patch := client.MergeFromWithOptions(conv.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(conv, HistoryFinalizer)
	if err := r.Patch(ctx, conv, patch); err != nil {
		return false, fmt.Errorf("adding finalizer to %s/%s: %w", conv.Namespace, conv.Name, err)
	}
	return true, nil
}

// finalize deletes a deleted Conversation's external history, then releases the finalizer.
// A failure is retried with backoff and reported as a Warning event.
func (r *ConversationReconciler) finalize(ctx context.Context, conv *parleyv1alpha1.Conversation) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(conv, HistoryFinalizer) {
		return ctrl.Result{}, nil
	}
	holder, err := r.historyKeyHolderOf(ctx, conv)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A Conversation refused for HistoryKeyTaken never deletes the history another one keeps.
	if conv.Status.SessionID != "" && holder == nil && conv.Annotations[AnnotationSkipHistoryCleanup] != "true" {
		leave, err := enterHistoryIO(r.HistoryGate, conv)
		if err != nil {
			return ctrl.Result{RequeueAfter: busyHistoryRecheck}, nil // the namespace's slots are taken
		}
		defer leave()
		if err := r.Sessions.Delete(ctx, conv); err != nil {
			r.Recorder.Eventf(conv, nil, corev1.EventTypeWarning, parleyv1alpha1.EventStoreCleanupFailed, "Finalize",
				"deleting the history at %s failed (%s); retrying. Annotate %s=true to give up and keep the objects",
				historystore.Location(conv), historystore.Message(err), AnnotationSkipHistoryCleanup)
			return ctrl.Result{}, fmt.Errorf("deleting the history of %s/%s: %w", conv.Namespace, conv.Name, err)
		}
		logf.FromContext(ctx).Info("history deleted with its Conversation", "location", historystore.Location(conv))
	}
	patch := client.MergeFrom(conv.DeepCopy())
	controllerutil.RemoveFinalizer(conv, HistoryFinalizer)
	if err := r.Patch(ctx, conv, patch); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("removing finalizer from %s/%s: %w", conv.Namespace, conv.Name, err)
	}
	return ctrl.Result{}, nil
}
