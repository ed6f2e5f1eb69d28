package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/internal/names"
)

// childName is "<base>-<suffix>", valid and deterministic (names.Child).
func childName(base, suffix string) string { return names.Child(base, suffix) }

// labelSafe is a name usable as a label value (names.Label).
func labelSafe(name string) string { return names.Label(name) }

// createCheckpoint creates a Checkpoint of the Conversation, owned by it; one that exists
// already (a restart repeating the step) is fine.
func (r *ConversationReconciler) createCheckpoint(ctx context.Context, conv *parleyv1alpha1.Conversation, name string, reason parleyv1alpha1.CheckpointReason, turn *int64) error {
	ckpt := &parleyv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       conv.Namespace,
			Name:            name,
			Labels:          map[string]string{LabelConversation: labelSafe(conv.Name)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(conv, parleyv1alpha1.GroupVersion.WithKind("Conversation"))},
		},
		Spec: parleyv1alpha1.CheckpointSpec{
			ConversationRef: parleyv1alpha1.ConversationReference{Name: conv.Name},
			Reason:          reason,
			Turn:            turn,
		},
	}
	if err := r.Create(ctx, ckpt); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s Checkpoint %s/%s: %w", reason, conv.Namespace, name, err)
	}
	metrics.CheckpointsCreated.WithLabelValues(string(reason)).Inc()
	return nil
}
