package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/source"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/pkg/history"
)

// The fake-client tier: the Conversation reconcile against controller-runtime's fake client,
// whose calls interceptor.Funcs make fail as an API server or a history store does (a
// conflict, an object that exists already, an outage), checking what the reconcile returns,
// which conditions it records and whether it asks to run again. The same paths on a real
// apiserver are slow or impossible to provoke; envtest covers the paths that succeed.

var ioNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

const ioSession = "8d6c1a52-3b9e-4f0a-9c7d-2e5b4a1f0c36"

// ioConversation is a Conversation as the API server stores it after defaulting, with a
// ConfigMap history and, when agent is true, an agent.
func ioConversation(agent bool) *parleyv1alpha1.Conversation {
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team", Name: "conv", UID: "uid-1", Generation: 1,
			CreationTimestamp: metav1.NewTime(ioNow.Add(-time.Minute)),
		},
		Spec: parleyv1alpha1.ConversationSpec{
			History: parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{MaxBytes: ptr.To(resource.MustParse("8Mi"))}},
			Lifetime: parleyv1alpha1.LifetimeSpec{
				TTL: &metav1.Duration{Duration: 24 * time.Hour}, ExpirationPolicy: parleyv1alpha1.ExpirationPolicy("Retain"),
			},
			Context: parleyv1alpha1.ContextSpec{
				CompactAtPercent: 80, Strategy: parleyv1alpha1.CompactionStrategy("SlidingWindow"), KeepRecentMessages: 10,
				Tokenizer: parleyv1alpha1.Tokenizer("cl100k_base"),
			},
			Suspend:      ptr.To(false),
			SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "be brief"},
		},
	}
	if agent {
		conv.Spec.Agent = &parleyv1alpha1.AgentSpec{
			Template:    corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}}},
			MaxRestarts: ptr.To[int32](5),
			Backoff: parleyv1alpha1.BackoffSpec{
				Initial: &metav1.Duration{Duration: 10 * time.Second}, Max: &metav1.Duration{Duration: 5 * time.Minute},
			},
			ResumeMountPath: "/var/run/parley", Adapter: parleyv1alpha1.AgentAdapter("generic"),
		}
	}
	return conv
}

// handedActivity is a session.Handoff holding one conversation's activity.
type handedActivity struct {
	mu       sync.Mutex
	at       time.Time
	held     bool
	restored []time.Time
}

func (a *handedActivity) Source() source.Source { return nil }

func (a *handedActivity) Take(types.NamespacedName) (time.Time, *history.Head, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	held := a.held
	a.held = false
	return a.at, nil, held
}

func (a *handedActivity) Restore(_ types.NamespacedName, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.restored = append(a.restored, at)
	a.at, a.held = at, true
}

// ioReconciler is a reconciler over a fake client holding conv, with funcs in front of it
// (for the controller and for the ConfigMap histories alike), and the events it records.
func ioReconciler(t *testing.T, conv *parleyv1alpha1.Conversation, funcs interceptor.Funcs) (*ConversationReconciler, client.Client, *events.FakeRecorder) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, parleyv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(conv).
		WithStatusSubresource(&parleyv1alpha1.Conversation{}, &parleyv1alpha1.Checkpoint{}).
		WithIndex(&parleyv1alpha1.Checkpoint{}, checkpointConversationIndex, func(o client.Object) []string {
			return []string{o.(*parleyv1alpha1.Checkpoint).Spec.ConversationRef.Name}
		}).
		WithIndex(&parleyv1alpha1.Conversation{}, historySessionIndex, indexHistorySession).
		WithInterceptorFuncs(funcs).
		Build()
	rec := events.NewFakeRecorder(64)
	return &ConversationReconciler{
		Client: c, APIReader: c, Scheme: scheme, Recorder: rec,
		Sessions:     &session.Sessions{Stores: &historystore.Stores{ConfigMaps: c, Secrets: c}},
		Clock:        clocktesting.NewFakePassiveClock(ioNow),
		NewSessionID: func() string { return ioSession },
		AgentAPIURL:  "https://parley-session-api.parley-system.svc:8082",
	}, c, rec
}

func reconcileConv(t *testing.T, r *ConversationReconciler, conv *parleyv1alpha1.Conversation) (ctrl.Result, error) {
	t.Helper()
	return r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(conv)})
}

// stored reads conv back from the fake API server.
func stored(t *testing.T, c client.Client, conv *parleyv1alpha1.Conversation) *parleyv1alpha1.Conversation {
	t.Helper()
	out := &parleyv1alpha1.Conversation{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(conv), out); err != nil {
		t.Fatal(err)
	}
	return out
}

func conditionOf(t *testing.T, conv *parleyv1alpha1.Conversation, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(conv.Status.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, conv.Status.Conditions)
	}
	return *c
}

// recorded drains the events recorded so far.
func recorded(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasEvent(evs []string, typ, reason string) bool {
	for _, e := range evs {
		if strings.HasPrefix(e, typ+" "+reason+" ") {
			return true
		}
	}
	return false
}

// A status write that loses the optimistic lock is no failure: the reconcile runs again
// shortly from a fresh copy, and the activity it had taken is handed back so it is not lost.
func TestAStatusConflictRequeuesSoonAndKeepsTheActivity(t *testing.T) {
	conv := ioConversation(false)
	var conflicts atomic.Int32
	conflicts.Store(1)
	r, c, _ := ioReconciler(t, conv, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if sub == "status" && conflicts.Add(-1) >= 0 {
				return apierrors.NewConflict(schema.GroupResource{Group: "parley.dev", Resource: "conversations"}, obj.GetName(), errors.New("the object has been modified"))
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	activity := &handedActivity{at: ioNow.Add(-time.Minute), held: true}
	r.Activity = activity

	res, err := reconcileConv(t, r, conv)
	if err != nil {
		t.Fatalf("a conflict returned %v; want a requeue without an error", err)
	}
	if res != (ctrl.Result{RequeueAfter: conflictRetryDelay}) {
		t.Errorf("result %+v, want RequeueAfter %v", res, conflictRetryDelay)
	}
	if len(activity.restored) != 1 || !activity.restored[0].Equal(ioNow.Add(-time.Minute)) {
		t.Errorf("activity handed back %v, want the minute-old activity once", activity.restored)
	}
	if got := stored(t, c, conv); got.Status.SessionID != "" {
		t.Errorf("the lost write reached the object: session %q", got.Status.SessionID)
	}

	// The next reconcile writes what the first decided, the activity included.
	if _, err := reconcileConv(t, r, conv); err != nil {
		t.Fatal(err)
	}
	got := stored(t, c, conv)
	if got.Status.SessionID != ioSession {
		t.Errorf("session %q after the retry", got.Status.SessionID)
	}
	if got.Status.LastActivityTime == nil || !got.Status.LastActivityTime.Time.Equal(ioNow.Add(-time.Minute)) {
		t.Errorf("lastActivityTime %v, want the activity handed back", got.Status.LastActivityTime)
	}
}

// Any other status write failure is returned, for the controller's backoff; the activity is
// handed back too.
func TestAStatusWriteFailureIsReturned(t *testing.T) {
	conv := ioConversation(false)
	r, c, _ := ioReconciler(t, conv, interceptor.Funcs{
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return apierrors.NewServiceUnavailable("etcd leader changed")
		},
	})
	activity := &handedActivity{at: ioNow, held: true}
	r.Activity = activity
	res, err := reconcileConv(t, r, conv)
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("error %v, want the write's 503", err)
	}
	if res != (ctrl.Result{}) {
		t.Errorf("result %+v with an error", res)
	}
	if len(activity.restored) != 1 {
		t.Errorf("activity handed back %d times, want once", len(activity.restored))
	}
	if got := stored(t, c, conv); got.Status.SessionID != "" {
		t.Errorf("status written: %+v", got.Status)
	}
}

// A history store that does not answer: the session still starts, HistoryAvailable says
// StoreUnavailable with a Warning event (once while the reason holds), the reconcile returns the
// error to be retried with backoff, and the next one that reaches the store recovers.
func TestAStoreOutageIsRecordedAndRetried(t *testing.T) {
	conv := ioConversation(false)
	var down atomic.Bool
	down.Store(true)
	outage := func(obj client.Object) error {
		if _, ok := obj.(*corev1.ConfigMap); ok && down.Load() {
			return apierrors.NewServiceUnavailable("the API server is overloaded")
		}
		return nil
	}
	r, c, rec := ioReconciler(t, conv, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := outage(obj); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := outage(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
	})

	for try := range 2 {
		_, err := reconcileConv(t, r, conv)
		if !errors.Is(err, history.ErrUnavailable) {
			t.Fatalf("try %d: error %v, want the store's ErrUnavailable", try, err)
		}
		got := stored(t, c, conv)
		if got.Status.SessionID != ioSession {
			t.Errorf("try %d: session %q; the session starts without its history", try, got.Status.SessionID)
		}
		cond := conditionOf(t, got, parleyv1alpha1.ConditionHistoryAvailable)
		if cond.Status != metav1.ConditionFalse || cond.Reason != parleyv1alpha1.ReasonStoreUnavailable {
			t.Errorf("try %d: HistoryAvailable %s/%s: %s", try, cond.Status, cond.Reason, cond.Message)
		}
		warned := hasEvent(recorded(rec), corev1.EventTypeWarning, parleyv1alpha1.EventHistoryUnavailable)
		if warned != (try == 0) {
			t.Errorf("try %d: HistoryUnavailable warning %v; want one on the first failure only", try, warned)
		}
	}

	down.Store(false)
	res, err := reconcileConv(t, r, conv)
	if err != nil {
		t.Fatalf("after the outage: %v", err)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("result %+v: want the requeue at the next due instant (the ttl)", res)
	}
	cond := conditionOf(t, stored(t, c, conv), parleyv1alpha1.ConditionHistoryAvailable)
	if cond.Status != metav1.ConditionTrue || cond.Reason != parleyv1alpha1.ReasonHistoryReady {
		t.Errorf("after the outage, HistoryAvailable %s/%s: %s", cond.Status, cond.Reason, cond.Message)
	}
}

// podCreate makes every agent pod create answer err (ConfigMaps and the rest pass through).
func podCreate(err error) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
	}
}

// podCreateAnswerLost makes every agent pod create store the pod and answer AlreadyExists, as
// a retry finds a pod whose create's answer was lost.
func podCreateAnswerLost() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			if _, ok := obj.(*corev1.Pod); ok && err == nil {
				return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, obj.GetName())
			}
			return err
		},
	}
}

// The pod's name is deterministic, so a create that finds a pod this Conversation controls
// already there is the answer to an earlier try whose status write was lost: the reconcile
// takes it as created, and records its UID.
func TestAnAgentPodThatExistsAlreadyIsTakenAsCreated(t *testing.T) {
	conv := ioConversation(true)
	r, c, rec := ioReconciler(t, conv, podCreateAnswerLost())
	if _, err := reconcileConv(t, r, conv); err != nil {
		t.Fatal(err)
	}
	got := stored(t, c, conv)
	if got.Status.Agent == nil || got.Status.Agent.Attempt != 1 || got.Status.Agent.PodName != agentpod.PodName(conv.Name, 1) {
		t.Fatalf("status.agent %+v, want attempt 1 on pod %s", got.Status.Agent, agentpod.PodName(conv.Name, 1))
	}
	pod := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: conv.Namespace, Name: agentpod.PodName(conv.Name, 1)}, pod); err != nil {
		t.Fatal(err)
	}
	if got.Status.Agent.PodUID != string(pod.UID) {
		t.Errorf("status.agent.podUID %q, want the pod's %q", got.Status.Agent.PodUID, pod.UID)
	}
	cond := conditionOf(t, got, parleyv1alpha1.ConditionAgentRunning)
	if cond.Status != metav1.ConditionFalse || cond.Reason != parleyv1alpha1.ReasonPodPending {
		t.Errorf("AgentRunning %s/%s: %s", cond.Status, cond.Reason, cond.Message)
	}
	if !hasEvent(recorded(rec), corev1.EventTypeNormal, parleyv1alpha1.EventAgentStarted) {
		t.Error("no AgentStarted event")
	}
}

// A pod someone else created under the next agent pod's name is not the agent pod: it gets
// no binding, is not deleted, and the name is tried again later.
func TestAPodSomeoneElseCreatedIsNotAdopted(t *testing.T) {
	conv := ioConversation(true)
	r, c, rec := ioReconciler(t, conv, interceptor.Funcs{})
	squatter := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: conv.Namespace, Name: agentpod.PodName(conv.Name, 1), UID: "squatter"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "attacker:1"}}},
	}
	if err := c.Create(t.Context(), squatter); err != nil {
		t.Fatal(err)
	}
	res, err := reconcileConv(t, r, conv)
	if err != nil {
		t.Fatal(err)
	}
	got := stored(t, c, conv)
	if got.Status.Agent != nil && (got.Status.Agent.PodName != "" || got.Status.Agent.PodUID != "" || got.Status.Agent.Attempt != 0) {
		t.Errorf("status.agent %+v: bound to a pod Parley did not create", got.Status.Agent)
	}
	cond := conditionOf(t, got, parleyv1alpha1.ConditionAgentRunning)
	if cond.Status != metav1.ConditionFalse || cond.Reason != parleyv1alpha1.ReasonPodNameTaken {
		t.Errorf("AgentRunning %s/%s: %s", cond.Status, cond.Reason, cond.Message)
	}
	if !hasEvent(recorded(rec), corev1.EventTypeWarning, parleyv1alpha1.EventAgentNameTaken) {
		t.Error("no AgentNameTaken warning")
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > DefaultNameTakenRetry {
		t.Errorf("result %+v: want another try within %s", res, DefaultNameTakenRetry)
	}
	left := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(squatter), left); err != nil || left.UID != squatter.UID || left.Annotations[AnnotationStoppedBy] != "" {
		t.Errorf("the squatter's pod was touched: %v %+v", err, left.ObjectMeta)
	}
}

// A pod create that fails for a reason that may pass is retried: the attempt is not counted
// and the condition says why.
func TestAFailedAgentPodCreateIsRetried(t *testing.T) {
	conv := ioConversation(true)
	r, c, _ := ioReconciler(t, conv, podCreate(apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "create", 1)))
	_, err := reconcileConv(t, r, conv)
	if !apierrors.IsServerTimeout(err) {
		t.Fatalf("error %v, want the create's timeout", err)
	}
	got := stored(t, c, conv)
	if got.Status.Agent != nil && (got.Status.Agent.Attempt != 0 || got.Status.Agent.PodName != "") {
		t.Errorf("status.agent %+v: a pod that was not created is counted", got.Status.Agent)
	}
	cond := conditionOf(t, got, parleyv1alpha1.ConditionAgentRunning)
	if cond.Status != metav1.ConditionFalse || cond.Reason != parleyv1alpha1.ReasonPodPending || !strings.Contains(cond.Message, "creating the agent pod") {
		t.Errorf("AgentRunning %s/%s: %s", cond.Status, cond.Reason, cond.Message)
	}
}

// A pod the API server refuses will be refused again: no retry, InvalidTemplate and one
// Warning event, until the template changes.
func TestARefusedAgentPodIsNotRetried(t *testing.T) {
	conv := ioConversation(true)
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, agentpod.PodName(conv.Name, 1),
		field.ErrorList{field.Invalid(field.NewPath("spec", "containers").Index(0).Child("image"), "", "must not be empty")})
	r, c, rec := ioReconciler(t, conv, podCreate(invalid))
	for try := range 2 {
		if _, err := reconcileConv(t, r, conv); err != nil {
			t.Fatalf("try %d: error %v, want none (retrying cannot help)", try, err)
		}
		cond := conditionOf(t, stored(t, c, conv), parleyv1alpha1.ConditionAgentRunning)
		if cond.Status != metav1.ConditionFalse || cond.Reason != parleyv1alpha1.ReasonInvalidTemplate {
			t.Errorf("try %d: AgentRunning %s/%s: %s", try, cond.Status, cond.Reason, cond.Message)
		}
		warned := hasEvent(recorded(rec), corev1.EventTypeWarning, parleyv1alpha1.EventAgentNotStarted)
		if warned != (try == 0) {
			t.Errorf("try %d: AgentNotStarted warning %v; want one, on the first refusal", try, warned)
		}
	}
}
