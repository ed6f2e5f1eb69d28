package controller

import (
	"context"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// conflictRetryDelay is how soon a reconcile that lost an optimistic-lock race runs again.
const conflictRetryDelay = 200 * time.Millisecond

// ErrStatusConflict reports that the object changed since it was read; the caller requeues
// and decides again from the fresh copy.
var ErrStatusConflict = fmt.Errorf("status conflict")

// PatchStatus is the one way the controllers write status: a merge patch of the difference
// between before and obj, sent only when status changed, with an optimistic lock. The lock
// makes a reconcile that read a stale object (before our previous patch reached the cache)
// fail instead of overwriting newer facts (e.g. minting a second session id).
//
// Status field ownership: the controllers write every status field; the Session API writes
// only status.lastActivityTime: handed to the reconciler on the replica that runs it
// (ActivityHandoff), with its own narrow patch on the others, which the controller reads. Such
// a patch makes a racing controller patch conflict once and retry.
func PatchStatus[T client.Object](ctx context.Context, c client.Client, before, obj T, statusOf func(T) any) error {
	if apiequality.Semantic.DeepEqual(statusOf(before), statusOf(obj)) {
		return nil
	}
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := c.Status().Patch(ctx, obj, patch); err != nil {
		if apierrors.IsConflict(err) {
			return ErrStatusConflict
		}
		return fmt.Errorf("patching status of %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
