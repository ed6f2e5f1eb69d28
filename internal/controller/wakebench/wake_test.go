package wakebench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/test/support/podwatch"
)

// agentsPerRun: wakes go round-robin over this many Conversations, so a Conversation's
// previous wake, answer and suspension are long done when it is woken again.
const agentsPerRun = 10

// suspendAfter is the smallest idle time worth setting: the agent falls asleep as soon as it
// answered, so the untimed part of each op stays short.
const suspendAfter = 50 * time.Millisecond

// settleTime is how long the benchmark lets the manager rest after a suspension, so a wake is
// measured from a quiet controller.
const settleTime = 300 * time.Millisecond

// BenchmarkWake: one op is one wake, from the Session API's answer to a person's message
// appended to a Conversation whose agent sleeps, to the arrival of the next attempt's pod on
// the harness's watch (no scheduler: it stops at the pod's creation). Wakes are one at a time:
// the figure is the latency of one wake. Between wakes (not timed) the new pod is reported
// Running, the agent answers, and the controller suspends it again.
func BenchmarkWake(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods, err := podwatch.Start(ctx, env.Clientset.CoreV1().Pods(namespace))
	if err != nil {
		b.Fatal(err)
	}
	defer pods.Stop()
	b.StopTimer()
	agents := make([]*agent, 0, agentsPerRun)
	lat := make([]time.Duration, 0, b.N)
	for i := range b.N {
		if len(agents) < agentsPerRun {
			agents = append(agents, newAgent(ctx, b, pods))
		}
		a := agents[i%len(agents)]
		lat = append(lat, a.wake(ctx, b, pods))
		a.answerAndSleep(ctx, b, pods)
	}
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 90)), "p90-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
	b.ReportMetric(ms(slices.Max(lat)), "max-ms")
	if len(lat) >= 100 {
		b.Logf("%d wakes: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms", len(lat),
			ms(percentile(lat, 50)), ms(percentile(lat, 90)), ms(percentile(lat, 99)), ms(slices.Max(lat)))
	}
}

// agent is one Conversation with an idle agent whose pods the benchmark plays the kubelet for.
type agent struct {
	conv    *parleyv1alpha1.Conversation
	attempt int32
	turn    int
}

func newAgent(ctx context.Context, b *testing.B, pods *podwatch.Watch) *agent {
	b.Helper()
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "wake-"},
		Spec: parleyv1alpha1.ConversationSpec{
			History: parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}},
			Agent: &parleyv1alpha1.AgentSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "example.com/agent:1"}}}},
				Idle:     &parleyv1alpha1.IdleSpec{SuspendAfter: metav1.Duration{Duration: suspendAfter}},
			},
		},
	}
	if err := env.Harness.Create(ctx, conv); err != nil {
		b.Fatal(err)
	}
	a := &agent{conv: conv, attempt: 1}
	<-pods.Expect(agentpod.PodName(conv.Name, 1))
	a.say(ctx, b, conversation.RoleUser)
	a.answerAndSleep(ctx, b, pods)
	return a
}

// wake appends a person's message and returns the time from its acknowledgement to the new
// pod's arrival: the timed part.
func (a *agent) wake(ctx context.Context, b *testing.B, pods *podwatch.Watch) time.Duration {
	b.Helper()
	a.attempt++
	arrived := pods.Expect(agentpod.PodName(a.conv.Name, a.attempt))
	b.StartTimer()
	acked := a.say(ctx, b, conversation.RoleUser)
	select {
	case at := <-arrived:
		b.StopTimer()
		return at.Sub(acked)
	case <-time.After(30 * time.Second):
		b.Fatalf("%s: no pod of attempt %d 30 s after the message", a.conv.Name, a.attempt)
	}
	return 0
}

// answerAndSleep reports the current pod Running, appends the agent's answer and waits until
// the Session API's view of the Conversation (the manager's cache) shows the agent asleep.
func (a *agent) answerAndSleep(ctx context.Context, b *testing.B, pods *podwatch.Watch) {
	b.Helper()
	<-pods.Expect(agentpod.PodName(a.conv.Name, a.attempt))
	pod := &corev1.Pod{}
	if err := env.Harness.Get(ctx, client.ObjectKey{Namespace: namespace, Name: agentpod.PodName(a.conv.Name, a.attempt)}, pod); err != nil {
		b.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "agent", Image: "example.com/agent:1", ImageID: "sha256:1", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
	}}
	if err := env.Harness.Status().Update(ctx, pod); err != nil {
		b.Fatal(err)
	}
	a.say(ctx, b, conversation.RoleAssistant)
	deadline := time.Now().Add(30 * time.Second)
	for {
		seen := &parleyv1alpha1.Conversation{}
		if err := cached.Get(ctx, client.ObjectKeyFromObject(a.conv), seen); err == nil && seen.AgentAsleep() &&
			seen.Status.Agent.Attempt == a.attempt && apierrors.IsNotFound(env.Harness.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})) {
			// The reconciles the suspension caused (its pod's deletion) are over before the
			// next wake: one of them must not be what starts the next pod.
			time.Sleep(settleTime)
			return
		}
		if time.Now().After(deadline) {
			c := meta.FindStatusCondition(seen.Status.Conditions, parleyv1alpha1.ConditionAgentRunning)
			b.Fatalf("%s: not asleep 30 s after its answer: %+v", a.conv.Name, c)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// say appends one message as a person (or, for the answer, as the agent would) and returns
// when the Session API acknowledged it.
func (a *agent) say(ctx context.Context, b *testing.B, role conversation.Role) time.Time {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a.turn++
		m := conversation.Message{
			ID: fmt.Sprintf("%s-%d", role, a.turn), Role: role,
			Blocks: []conversation.Block{{Type: conversation.BlockText, Text: fmt.Sprintf("%s %d", role, a.turn)}},
		}
		_, err := person.Append(ctx, namespace, a.conv.Name, []conversation.Message{m})
		if err == nil {
			return time.Now()
		}
		if time.Now().After(deadline) { // e.g. the history is not created yet
			b.Fatalf("%s: appending: %v", a.conv.Name, err)
		}
		a.turn--
		time.Sleep(10 * time.Millisecond)
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[max(int(math.Ceil(p/100*float64(len(s))))-1, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
