package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// Fixtures shared by the pure tests of this package: no apiserver, no client, time as a value.

var created = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

const (
	mintedID = "11111111-2222-4333-8444-555555555555"
	pinnedID = "6f1c2b8e-3d4a-4e5f-9a7b-1c2d3e4f5a6b"
)

func mint() string { return mintedID }

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func ptrTo[T any](v T) *T { return &v }

// testConv is a ConfigMap-backed Conversation created at created, generation 3, changed by opts.
func testConv(opts ...func(*parleyv1alpha1.Conversation)) *parleyv1alpha1.Conversation {
	c := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Generation: 3, CreationTimestamp: metav1.NewTime(created)},
		Spec: parleyv1alpha1.ConversationSpec{
			History: parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}},
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func withLifetime(l parleyv1alpha1.LifetimeSpec) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) { c.Spec.Lifetime = l }
}

func withSession(id string) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) { c.Status.SessionID = id }
}

func withCondition(condType string, status metav1.ConditionStatus, reason string) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: condType, Status: status, Reason: reason, Message: "before"})
	}
}

// decidePure runs the phases of a reconcile that need no store, in the reconciler's order.
func decidePure(conv *parleyv1alpha1.Conversation, now time.Time) (*conversationScope, bool, expiryDecision) {
	s := newConversationScope(conv, now)
	minted := decideSession(s, mint)
	d := decideExpiry(s)
	summarizeConditions(s)
	return s, minted, d
}

func mustCondition(t *testing.T, s *conversationScope, condType string) *metav1.Condition {
	t.Helper()
	c := s.condition(condType)
	if c == nil {
		t.Fatalf("no %s condition in %+v", condType, s.status.Conditions)
	}
	return c
}

// unchanged fails when a decision mutated the object it was given.
func unchanged(t *testing.T, before, after *parleyv1alpha1.Conversation) {
	t.Helper()
	if !equality.Semantic.DeepEqual(before, after) {
		t.Errorf("the input object was mutated:\nbefore %+v\nafter  %+v", before.Status, after.Status)
	}
}

// withAgent declares an agent pod template.
func withAgent(c *parleyv1alpha1.Conversation) {
	c.Spec.Agent = &parleyv1alpha1.AgentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}},
	}}}
}

// TestRequeueCountsFromTheReturn: the workqueue counts RequeueAfter from when Reconcile
// returns, so the delay decided at the reconcile's start loses the time the reconcile took;
// otherwise an expiry fires that much late (found in the scale benchmark: p50 162 ms late with
// 30 expiries a second).
func TestRequeueCountsFromTheReturn(t *testing.T) {
	start := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	s := &conversationScope{now: start}
	if got := s.requeueFrom(start.Add(time.Second)); got != 0 {
		t.Errorf("no timer asked: RequeueAfter %v, want 0", got)
	}
	s.requeueAt(start.Add(10 * time.Second))
	if got := s.requeueFrom(start.Add(120 * time.Millisecond)); got != 10*time.Second-120*time.Millisecond {
		t.Errorf("RequeueAfter %v, want the 10 s decided at the start less the 120 ms the reconcile took", got)
	}
	if got := s.requeueFrom(start.Add(11 * time.Second)); got != time.Millisecond {
		t.Errorf("a timer due during the reconcile: RequeueAfter %v, want 1ms (at once)", got)
	}
}

// TestWithStatusSharesNothing: the Conversation with the status being built shares no slice
// or pointer with that status or with the object as read, so a phase that goes on setting a
// condition or an agent field in place changes neither a copy already handed out nor the
// object the status write is conditional on.
func TestWithStatusSharesNothing(t *testing.T) {
	s := newConversationScope(testConv(), created)
	s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady, "ready")
	s.status.Agent = &parleyv1alpha1.AgentStatus{Attempt: 1}
	conv := s.withStatus()
	read := s.conv.DeepCopy()

	s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionFalse, parleyv1alpha1.ReasonStoreUnavailable, "gone")
	s.status.Agent.Attempt = 2
	conv.Status.Conditions[0].Message = "changed through the copy"

	if c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable); c.Message != "changed through the copy" || c.Status != metav1.ConditionTrue {
		t.Errorf("the copy's condition followed the scope: %+v", c)
	}
	if conv.Status.Agent.Attempt != 1 {
		t.Errorf("the copy's agent attempt followed the scope: %d", conv.Status.Agent.Attempt)
	}
	if c := s.condition(parleyv1alpha1.ConditionHistoryAvailable); c.Message != "gone" {
		t.Errorf("the scope's condition followed the copy: %+v", c)
	}
	if !equality.Semantic.DeepEqual(read, s.conv) {
		t.Error("the object as read changed")
	}
}
