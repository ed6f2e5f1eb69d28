package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// The agent pod and its resume bundle have names anyone can predict (<conversation>-agent-<n>,
// <conversation>-bundle-<n>), so that a manager whose create answer was lost finds the object
// it made. Whoever may create pods or ConfigMaps in the namespace can create one under such a
// name first. Parley uses an existing object only when this Conversation controls it, never
// deletes one it does not, and binds the agent's token to the pod's UID (status.agent.podUID),
// so a pod under the right name is still not the agent pod.

// DefaultNameTakenRetry is how long the agent phase waits before trying a taken name again
// (nothing wakes it when the other object goes: it is not Parley's to watch).
const DefaultNameTakenRetry = 30 * time.Second

func (r *ConversationReconciler) nameTakenRetry() time.Duration {
	if r.NameTakenRetry > 0 {
		return r.NameTakenRetry
	}
	return DefaultNameTakenRetry
}

// nameTakenError: an object this Conversation does not control holds a name the agent phase
// needs. reason is the AgentRunning reason that says so.
type nameTakenError struct {
	kind, name, reason string
}

func (e *nameTakenError) Error() string {
	return fmt.Sprintf("%s %s exists and is not controlled by this Conversation", e.kind, e.name)
}

// createControlled creates obj, which conv controls. When the name exists, the object there
// is used only if conv controls it (a create whose answer was lost); otherwise it is a
// *nameTakenError with reason. On success obj holds the stored object (its UID).
func (r *ConversationReconciler) createControlled(ctx context.Context, conv *parleyv1alpha1.Conversation, obj client.Object, reason string) error {
	err := r.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	kind := fmt.Sprintf("%T", obj)
	if gvk, gerr := r.GroupVersionKindFor(obj); gerr == nil {
		kind = gvk.Kind
	}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return err
	}
	if !metav1.IsControlledBy(obj, conv) {
		return &nameTakenError{kind: kind, name: obj.GetName(), reason: reason}
	}
	return nil
}

// deleteControlled deletes the object named by obj when conv controls it, by its UID; an
// object of that name someone else made is left alone. Best effort.
func (r *ConversationReconciler) deleteControlled(ctx context.Context, conv *parleyv1alpha1.Conversation, obj client.Object) {
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil || !metav1.IsControlledBy(obj, conv) {
		return
	}
	uid := obj.GetUID()
	_ = r.Delete(ctx, obj, client.Preconditions{UID: &uid})
}
