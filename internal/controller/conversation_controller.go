package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/pkg/history"
)

// ConversationReconciler reconciles a Conversation in phases over a scope read once: the
// session id, the expiry, the history (open, initialise, summarise, or the expiration policy),
// the checkpoint policy, and a summary of the conditions; then it writes status in one patch,
// emits the events of what changed, and requeues at the next due instant (no periodic scan).
type ConversationReconciler struct {
	client.Client
	// APIReader reads objects the manager does not cache (system prompt and seed ConfigMaps).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// Sessions opens the conversations' live histories and keeps their views between
	// reconciles.
	Sessions *session.Sessions
	// Compactor runs the compactions the compaction phase asks for; nil: no compaction.
	Compactor Compactor
	// Activity is the activity this replica's Session API hands over; nil: the Session API
	// writes lastActivityTime itself.
	Activity session.Handoff
	// Clock is the source of "now"; tests inject a fake one.
	Clock clock.PassiveClock
	// NewSessionID mints session ids; SessionIDFor(uid) unless a test pins it.
	NewSessionID func() string
	// MaxConcurrentReconciles bounds parallel reconciles (1 when zero).
	MaxConcurrentReconciles int
	// HistoryGate bounds the reconciles of one namespace that wait on an object store history
	// at once; share it with the CheckpointReconciler (namespace_gate.go). Nil: a gate of its
	// own with HistoryIOPerNamespace's default.
	HistoryGate *NamespaceGate
	// AgentAPIURL is the Session API's URL as agent pods reach it (PARLEY_API_URL);
	// AgentCAConfigMap, when set, names a ConfigMap (key ca.crt, in each agent's namespace)
	// mounted for PARLEY_CA_FILE.
	AgentAPIURL      string
	AgentCAConfigMap string
	// AgentCA returns the Session API's CAs (PEM) when agents must be told to trust them (nil:
	// they need none). Read at each agent start, so a renewed or rotated CA reaches new agents:
	// it travels in each bundle ConfigMap as parley-ca.crt, and PARLEY_CA_FILE points at it.
	AgentCA func() []byte
	// NodeLostGrace is how long an agent pod's node may be NotReady before the pod counts as
	// lost (DefaultNodeLostGrace when zero).
	NodeLostGrace time.Duration
	// NameTakenRetry is how long the agent phase waits before trying again a pod or bundle
	// name that an object it does not control holds (DefaultNameTakenRetry when zero).
	NameTakenRetry time.Duration
	// CheckpointRefusedRetry is how long a phase waits before creating again a Checkpoint the
	// API server refused (DefaultCheckpointRefusedRetry when zero).
	CheckpointRefusedRetry time.Duration
	// MinForcedCompactionInterval is the least time between a compaction and one forced by
	// the parley.dev/compact-requested-at annotation (zero: none).
	MinForcedCompactionInterval time.Duration
	// Observe, when set, is told of every reconcile before it starts (tests count them to
	// prove that an idle Conversation is not polled).
	Observe func(ctrl.Request)

	// own drops the watch events of this controller's own status writes.
	own session.OwnWrites
}

// What the Conversation controller does with the API (docs/operations.md#permissions has every
// right with its reason): it caches Conversations, patches its finalizer on and off, deletes an
// expired one, and writes status with an update; it sets Conversations as the controller owner
// of what it creates (owner references that block deletion need conversations/finalizers);
// it creates, caches and deletes Checkpoints, agent pods (read uncached once to tell a pod it
// does not control) and their bundle ConfigMaps, and reads system prompt and seed ConfigMaps
// uncached. Nodes are cluster-scoped: watched for NodeLost, they stay in manager-cluster-role.
// +kubebuilder:rbac:groups=parley.dev,resources=conversations,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=parley.dev,resources=conversations/status,verbs=update
// +kubebuilder:rbac:groups=parley.dev,resources=conversations/finalizers,verbs=update
// +kubebuilder:rbac:groups=parley.dev,resources=checkpoints,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch,roleName=manager-cluster-role

// Reconcile runs the phases and writes what they decided.
func (r *ConversationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	if r.Observe != nil {
		r.Observe(req)
	}

	conv := &parleyv1alpha1.Conversation{}
	if err := r.Get(ctx, req.NamespacedName, conv); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.own.ReconcileStarts(req.NamespacedName, conv.ResourceVersion)
	if !conv.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, conv)
	}
	if wrote, err := r.ensureFinalizer(ctx, conv); err != nil || wrote {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	s := newConversationScope(conv, r.Clock.Now())
	var activityAt time.Time
	var activityHead *history.Head
	var tookActivity bool
	if r.Activity != nil {
		if activityAt, activityHead, tookActivity = r.Activity.Take(req.NamespacedName); tookActivity {
			applyActivity(s, activityAt)
		}
	}
	unchanged := r.own.UnchangedSince(req.NamespacedName, conv.ResourceVersion)
	s.summaryCurrent = !tookActivity && unchanged
	s.viewHead = session.ViewHeadToTrust(activityHead, unchanged)
	minted := decideSession(s, func() string { return r.newSessionID(conv) })
	exp := decideExpiry(s)
	// The history is keyed by the session id, and a minted id is derived from the object's
	// uid: when this status write is lost, the next reconcile mints the same id and finds the
	// history created here, so the history need not wait for the id to be recorded first.
	r.reconcileHistory(ctx, s)
	r.reconcileCompaction(ctx, s)
	r.reconcileCheckpoints(ctx, s)
	r.reconcileAgent(ctx, s)
	settleCheckpointRefusal(s)
	summarizeConditions(s)

	written := s.withStatus()
	if !apiequality.Semantic.DeepEqual(conv.Status, written.Status) {
		r.own.Note(conv, &written.Status)
	}
	if err := WriteStatus(ctx, r.Client, conv, written, conversationStatus); err != nil {
		r.own.Forget(req.NamespacedName)
		if tookActivity {
			r.Activity.Restore(req.NamespacedName, activityAt)
		}
		if errors.Is(err, ErrStatusConflict) {
			return ctrl.Result{RequeueAfter: conflictRetryDelay}, nil
		}
		return ctrl.Result{}, err
	}
	r.own.Wrote(req.NamespacedName, written.ResourceVersion)

	announceStart(s, minted)
	if minted {
		log.Info("session started", "sessionID", s.status.SessionID)
	}
	if exp.expiredNow {
		log.Info("session expired", "sessionID", s.status.SessionID, "expiresAt", s.status.ExpiresAt)
		metrics.Expirations.WithLabelValues(s.expiry.Reason).Inc()
		metrics.ObserveExpiryLateness(s.now.Sub(s.expiry.At))
		s.event(parleyv1alpha1.EventExpired, "Expire", "session %s expired", s.status.SessionID)
	}
	r.emit(written, s.events)
	if s.agentCrashed != "" {
		metrics.AgentCrashes.WithLabelValues(s.agentCrashed).Inc()
	}
	if s.agentFailed != "" {
		metrics.AgentsFailed.WithLabelValues(s.agentFailed).Inc()
	}
	if s.agentStarted != "" {
		metrics.AgentPodsStarted.WithLabelValues(string(s.agentStarted)).Inc()
	}
	observeWake(s, r.Clock.Now())
	if !s.restartedAfter.IsZero() {
		metrics.CrashToStart.Observe(s.now.Sub(s.restartedAfter).Seconds())
	}

	if s.retryErr != nil {
		return ctrl.Result{}, s.retryErr
	}
	if exp.deleteNow && decideHistoryAction(s) != historyArchive {
		if err := r.Delete(ctx, written, client.Preconditions{UID: &written.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting expired Conversation %s: %w", req.NamespacedName, err)
		}
		log.Info("deleted expired conversation", "sessionID", s.status.SessionID)
		r.Recorder.Eventf(written, nil, corev1.EventTypeNormal, parleyv1alpha1.EventDeleted, "Delete",
			"deleted %s after lifetime.deleteAfter", conv.Spec.Lifetime.DeleteAfter.Duration)
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: s.requeueFrom(r.Clock.Now())}, nil
}

func conversationStatus(c *parleyv1alpha1.Conversation) any { return c.Status }

func (r *ConversationReconciler) emit(obj runtime.Object, evs []pendingEvent) {
	for _, e := range evs {
		typ := corev1.EventTypeNormal
		if e.warning {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(obj, nil, typ, e.reason, e.action, "%s", e.message)
	}
}

func (r *ConversationReconciler) newSessionID(conv *parleyv1alpha1.Conversation) string {
	if r.NewSessionID != nil {
		return r.NewSessionID()
	}
	return SessionIDFor(conv.UID)
}

// sessionIDSpace is the UUID namespace of session ids derived from object uids.
var sessionIDSpace = uuid.MustParse("5f0c3e4a-9d1b-4c67-8a2e-7b3d9f1e6c05")

// SessionIDFor is the session id minted for the Conversation with this uid: a UUID v5 of the
// uid. It is the same on every try (a retry after a lost status write finds the history the
// first try created) and differs for a re-created object of the same name (which must not
// inherit a retained history; pin spec.sessionID to continue one on purpose).
func SessionIDFor(uid types.UID) string {
	return uuid.NewSHA1(sessionIDSpace, []byte(uid)).String()
}

// SetupWithManager sets up the controller with the Manager. Call SetupIndexes first.
func (r *ConversationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	workers := max(r.MaxConcurrentReconciles, 1)
	if r.HistoryGate == nil {
		r.HistoryGate = NewNamespaceGate(HistoryIOPerNamespace(workers, 0))
	}
	b := ctrl.NewControllerManagedBy(mgr).
		// The reconcile that wrote a status already acted on it: its own write wakes nothing.
		For(&parleyv1alpha1.Conversation{}, builder.WithPredicates(r.own.Predicate())).
		// A Checkpoint becoming Ready moves latestCheckpoint and unblocks an Archive expiry.
		Watches(&parleyv1alpha1.Checkpoint{}, handler.EnqueueRequestsFromMapFunc(conversationOfCheckpoint)).
		// Agent pods: a crash, a start or a deletion wakes their Conversation at once.
		Owns(&corev1.Pod{}).
		// A node going NotReady (or Ready again) wakes the Conversations with agent pods on it.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.conversationsOnNode), builder.WithPredicates(nodeReadyChanged()))
	if src, ok := r.Compactor.(interface{ Source() source.Source }); ok {
		b = b.WatchesRawSource(src.Source()) // a finished compaction wakes its Conversation
	}
	if r.Activity != nil {
		b = b.WatchesRawSource(r.Activity.Source()) // appends this replica served
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Named("conversation").
		Complete(r)
}

func conversationOfCheckpoint(_ context.Context, o client.Object) []reconcile.Request {
	c := o.(*parleyv1alpha1.Checkpoint)
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.ConversationRef.Name}}}
}
