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

// WriteStatus is the one way the controllers write status: an update of the status
// subresource, sent only when status changed, conditional on the resourceVersion obj was read
// at. The condition makes a reconcile that read a stale object (before our previous write
// reached the cache) fail instead of overwriting newer facts (e.g. minting a second session id).
// An update costs the API server less than the equivalent merge patch with the same lock (no
// encoding of the stored object and no patch to apply; BenchmarkStatusWrite measures it), and
// status writes are most of what the API server does for Parley at scale (docs/benchmarks.md).
//
// Status field ownership: the controllers write every status field; the Session API writes
// only status.lastActivityTime: handed to the reconciler on the replica that runs it, with its
// own narrow patch on the others, which the controller reads (package session, "The activity
// hand-off"). Such a patch makes a racing controller write conflict once and retry.
func WriteStatus[T client.Object](ctx context.Context, c client.Client, before, obj T, statusOf func(T) any) error {
	if apiequality.Semantic.DeepEqual(statusOf(before), statusOf(obj)) {
		return nil
	}
	if obj.GetResourceVersion() == "" || obj.GetResourceVersion() != before.GetResourceVersion() {
		return fmt.Errorf("writing status of %s %s: not the copy that was read (resourceVersion %q, read at %q)",
			obj.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(obj), obj.GetResourceVersion(), before.GetResourceVersion())
	}
	if err := c.Status().Update(ctx, obj); err != nil {
		if apierrors.IsConflict(err) {
			return ErrStatusConflict
		}
		return fmt.Errorf("writing status of %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
