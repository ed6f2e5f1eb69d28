package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// agentPodNodeIndex indexes cached agent pods by the node they are bound to.
const agentPodNodeIndex = "spec.nodeName"

// conversationsOnNode maps a Node to the Conversations whose agent pods run on it.
func (r *ConversationReconciler) conversationsOnNode(ctx context.Context, o client.Object) []reconcile.Request {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.MatchingFields{agentPodNodeIndex: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(pods.Items))
	for i := range pods.Items {
		owner := metav1ControllerOf(&pods.Items[i])
		if owner == "" {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: pods.Items[i].Namespace, Name: owner}})
	}
	return reqs
}

func metav1ControllerOf(pod *corev1.Pod) string {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "Conversation" {
			return ref.Name
		}
	}
	return ""
}

// nodeReadyChanged passes Node updates whose Ready condition changed, and deletions.
func nodeReadyChanged() predicate.Funcs {
	ready := func(o client.Object) corev1.ConditionStatus {
		n, ok := o.(*corev1.Node)
		if !ok {
			return ""
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status
			}
		}
		return ""
	}
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(e event.UpdateEvent) bool { return ready(e.ObjectOld) != ready(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
