package controller

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// checkpointConversationIndex indexes Checkpoints by the Conversation they name, so a
// Conversation event wakes exactly its Checkpoints.
const checkpointConversationIndex = "spec.conversationRef.name"

// CheckpointReconciler reconciles a Checkpoint. This version resolves the Conversation and
// records its session; writing the snapshot itself comes with the history store.
type CheckpointReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=parley.dev,resources=checkpoints,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=parley.dev,resources=checkpoints/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=parley.dev,resources=checkpoints/finalizers,verbs=update

// Reconcile resolves the Checkpoint's Conversation and writes the status in one patch.
func (r *CheckpointReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ckpt := &parleyv1alpha1.Checkpoint{}
	if err := r.Get(ctx, req.NamespacedName, ckpt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ckpt.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	conv := &parleyv1alpha1.Conversation{}
	convKey := types.NamespacedName{Namespace: ckpt.Namespace, Name: ckpt.Spec.ConversationRef.Name}
	err := r.Get(ctx, convKey, conv)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("reading Conversation %s: %w", convKey, err)
	}

	st := decideCheckpoint(ckpt, conv, err == nil)
	if apiequality.Semantic.DeepEqual(ckpt.Status, st) {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(ckpt.DeepCopy())
	ckpt.Status = st
	if err := r.Status().Patch(ctx, ckpt, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("patching status of Checkpoint %s: %w", req.NamespacedName, err)
	}
	return ctrl.Result{}, nil
}

// decideCheckpoint derives a Checkpoint's status from its Conversation (found or not).
func decideCheckpoint(ckpt *parleyv1alpha1.Checkpoint, conv *parleyv1alpha1.Conversation, found bool) parleyv1alpha1.CheckpointStatus {
	st := *ckpt.Status.DeepCopy()
	st.ObservedGeneration = ckpt.Generation
	st.Phase = parleyv1alpha1.CheckpointPending
	cond := metav1.Condition{
		Type:               parleyv1alpha1.ConditionReady,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: ckpt.Generation,
	}
	if !found {
		cond.Reason = parleyv1alpha1.ReasonConversationNotFound
		cond.Message = fmt.Sprintf("Conversation %q not found in namespace %q; the checkpoint waits for it",
			ckpt.Spec.ConversationRef.Name, ckpt.Namespace)
	} else {
		st.SessionID = conv.Status.SessionID
		cond.Reason = parleyv1alpha1.ReasonNotImplemented
		cond.Message = "writing snapshots is not implemented by this version yet"
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

// SetupWithManager sets up the controller with the Manager.
func (r *CheckpointReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &parleyv1alpha1.Checkpoint{}, checkpointConversationIndex,
		func(o client.Object) []string {
			return []string{o.(*parleyv1alpha1.Checkpoint).Spec.ConversationRef.Name}
		}); err != nil {
		return fmt.Errorf("indexing checkpoints by conversation: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&parleyv1alpha1.Checkpoint{}).
		Watches(&parleyv1alpha1.Conversation{}, handler.EnqueueRequestsFromMapFunc(r.checkpointsOf)).
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
