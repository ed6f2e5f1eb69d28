package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/metrics"
)

// conflictRetryDelay is how soon a reconcile that lost an optimistic-lock race runs again.
const conflictRetryDelay = 200 * time.Millisecond

// ConversationReconciler reconciles a Conversation: it assigns the session id, tracks the
// lifetime, expires the session exactly when it is due (a timer per object, no periodic scan)
// and deletes it after lifetime.deleteAfter.
type ConversationReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	// Clock is the source of "now"; tests inject a fake one.
	Clock clock.PassiveClock
	// NewSessionID mints session ids; uuid v4 unless a test pins it.
	NewSessionID func() string
}

// +kubebuilder:rbac:groups=parley.dev,resources=conversations,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=parley.dev,resources=conversations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=parley.dev,resources=conversations/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile reads the Conversation, decides its status with decideConversation, writes the
// status in one patch when it changed, and requeues at the next due time.
func (r *ConversationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	conv := &parleyv1alpha1.Conversation{}
	if err := r.Get(ctx, req.NamespacedName, conv); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !conv.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	now := r.Clock.Now()
	d := decideConversation(conv, now, r.newSessionID)

	if !apiequality.Semantic.DeepEqual(conv.Status, d.status) {
		// The optimistic lock makes a reconcile that read a stale object (before our previous
		// patch reached the cache) fail instead of minting a second session id.
		patch := client.MergeFromWithOptions(conv.DeepCopy(), client.MergeFromWithOptimisticLock{})
		conv.Status = d.status
		if err := r.Status().Patch(ctx, conv, patch); err != nil {
			if apierrors.IsConflict(err) {
				// Someone wrote the object since we read it; decide again from the fresh copy.
				return ctrl.Result{RequeueAfter: conflictRetryDelay}, nil
			}
			return ctrl.Result{}, fmt.Errorf("patching status of Conversation %s: %w", req.NamespacedName, err)
		}
	}

	if d.minted {
		log.Info("session started", "sessionID", d.status.SessionID)
		r.Recorder.Eventf(conv, nil, corev1.EventTypeNormal, parleyv1alpha1.EventSessionStarted, "Start",
			"session %s started; expires at %s", d.status.SessionID, d.status.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if d.expiredNow {
		log.Info("session expired", "sessionID", d.status.SessionID, "expiresAt", d.status.ExpiresAt)
		if cond := meta.FindStatusCondition(d.status.Conditions, parleyv1alpha1.ConditionExpired); cond != nil {
			metrics.Expirations.WithLabelValues(cond.Reason).Inc()
		}
		r.Recorder.Eventf(conv, nil, corev1.EventTypeNormal, parleyv1alpha1.EventExpired, "Expire",
			"session %s expired", d.status.SessionID)
	}
	if d.deleteNow {
		if err := r.Delete(ctx, conv, client.Preconditions{UID: &conv.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting expired Conversation %s: %w", req.NamespacedName, err)
		}
		log.Info("deleted expired conversation", "sessionID", d.status.SessionID)
		r.Recorder.Eventf(conv, nil, corev1.EventTypeNormal, parleyv1alpha1.EventDeleted, "Delete",
			"deleted %s after lifetime.deleteAfter", conv.Spec.Lifetime.DeleteAfter.Duration)
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: d.requeueAfter}, nil
}

func (r *ConversationReconciler) newSessionID() string {
	if r.NewSessionID != nil {
		return r.NewSessionID()
	}
	return uuid.NewString()
}

// SetupWithManager sets up the controller with the Manager.
func (r *ConversationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&parleyv1alpha1.Conversation{}).
		Named("conversation").
		Complete(r)
}
