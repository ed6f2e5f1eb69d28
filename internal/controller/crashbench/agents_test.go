package crashbench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/names"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// backoff is spec.agent.backoff (initial and max): the smallest a user can set is what lets
// the figure be the controller's own latency; the backoff itself is the user's choice.
const backoff = time.Millisecond

// firstMessages: three complete turns and the user message of a fourth, so the first crash
// happens in the middle of turn 4.
const firstMessages = 7

// agent is one Conversation with spec.agent whose pods the benchmark plays the kubelet for.
type agent struct {
	conv     *parleyv1alpha1.Conversation
	attempt  int32 // the current pod's attempt
	restarts int32
	messages int
}

// newAgent creates a Conversation, gives its history a few messages and brings its first
// pod to Running, as an agent that has been conversing for a while.
func newAgent(ctx context.Context, b *testing.B) *agent {
	b.Helper()
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "crash-"},
		Spec: parleyv1alpha1.ConversationSpec{
			History: parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}},
			Agent: &parleyv1alpha1.AgentSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "agent", Image: "example.com/agent:1"}},
				}},
				MaxRestarts: ptr.To(int32(100000)),
				Backoff: parleyv1alpha1.BackoffSpec{
					Initial: &metav1.Duration{Duration: backoff}, Max: &metav1.Duration{Duration: backoff},
				},
			},
		},
	}
	if err := harness.Create(ctx, conv); err != nil {
		b.Fatal(err)
	}
	a := &agent{conv: conv, attempt: 1}
	a.waitFor(ctx, b, "the history", func() bool {
		return meta.IsStatusConditionTrue(a.conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
	})
	a.appendMessages(ctx, b, firstMessages)
	pod := a.pod(ctx, b, 1)
	a.running(ctx, b, pod)
	return a
}

// appendMessages appends n alternating messages, as the agent would through the Session
// API, then waits for the controller to count them (the Session API's appends leave the
// manager's view of the history warm; so does this).
func (a *agent) appendMessages(ctx context.Context, b *testing.B, n int) {
	b.Helper()
	h, err := harnessStores.Open(ctx, a.conv, false)
	if err != nil {
		b.Fatal(err)
	}
	records := make([]history.Record, 0, n)
	for i := a.messages; i < a.messages+n; i++ {
		role := conversation.RoleUser
		if i%2 == 1 {
			role = conversation.RoleAssistant
		}
		rec, err := journal.MessageRecord(&conversation.Message{ID: fmt.Sprintf("m%04d", i), Role: role, Blocks: []conversation.Block{{
			Type: conversation.BlockText, Text: fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum dolor ", 12)),
		}}})
		if err != nil {
			b.Fatal(err)
		}
		records = append(records, rec)
	}
	if _, err := journal.AppendAll(ctx, h, records); err != nil {
		b.Fatal(err)
	}
	a.messages += n
	patch := client.MergeFrom(a.conv.DeepCopy())
	if a.conv.Annotations == nil {
		a.conv.Annotations = map[string]string{}
	}
	a.conv.Annotations["bench.parley.dev/poke"] = time.Now().Format(time.RFC3339Nano)
	if err := harness.Patch(ctx, a.conv, patch); err != nil {
		b.Fatal(err)
	}
	a.waitFor(ctx, b, "the messages counted", func() bool {
		return a.conv.Status.History != nil && a.conv.Status.History.Messages == int64(a.messages)
	})
}

// pod waits for the pod of an attempt.
func (a *agent) pod(ctx context.Context, b *testing.B, attempt int32) *corev1.Pod {
	b.Helper()
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: namespace, Name: agentpod.PodName(a.conv.Name, attempt)}
	poll(ctx, b, "pod "+key.Name, func() bool { return harness.Get(ctx, key, pod) == nil })
	return pod
}

// running reports the pod's agent container running, as the kubelet would, and waits for the
// controller to see it.
func (a *agent) running(ctx context.Context, b *testing.B, pod *corev1.Pod) {
	b.Helper()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "agent", Image: "example.com/agent:1", ImageID: "sha256:1", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
	}}
	if err := harness.Status().Update(ctx, pod); err != nil {
		b.Fatal(err)
	}
	a.waitFor(ctx, b, "AgentRunning=True", func() bool {
		c := meta.FindStatusCondition(a.conv.Status.Conditions, parleyv1alpha1.ConditionAgentRunning)
		return c != nil && c.Status == metav1.ConditionTrue && a.conv.Status.Agent != nil && a.conv.Status.Agent.PodName == pod.Name
	})
}

// crashed is the status the kubelet writes when the agent container exits 1.
func crashed(pod *corev1.Pod) {
	now := metav1.Now()
	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "agent", Image: "example.com/agent:1", ImageID: "sha256:1",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", StartedAt: now, FinishedAt: now,
		}},
	}}
}

// waitFor polls the Conversation until ok.
func (a *agent) waitFor(ctx context.Context, b *testing.B, what string, ok func() bool) {
	b.Helper()
	poll(ctx, b, a.conv.Name+": "+what, func() bool {
		return harness.Get(ctx, client.ObjectKeyFromObject(a.conv), a.conv) == nil && ok()
	})
}

func (a *agent) crashCheckpoint() string {
	return names.Child(a.conv.Name, fmt.Sprintf("crash-%d", a.attempt))
}

func (a *agent) bundleName(attempt int32) string {
	return names.Child(a.conv.Name, fmt.Sprintf("bundle-%d", attempt))
}

// poll checks ok every 5 ms for up to 30 s.
func poll(ctx context.Context, b *testing.B, what string, ok func() bool) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			b.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
