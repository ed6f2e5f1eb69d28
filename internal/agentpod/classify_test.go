package agentpod

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func agentPod(phase corev1.PodPhase, agent corev1.ContainerState) *corev1.Pod {
	return &corev1.Pod{
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "agent"}, {Name: "sidecar"}}},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "sidecar", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "agent", State: agent},
		}},
	}
}

func terminated(code int32, reason string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, Message: "boom", FinishedAt: metav1.NewTime(t0.Add(-time.Second)),
	}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "detail"}}
}

func with(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod { f(p); return p }

func TestClassify(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(-time.Minute))}}
	deleting := metav1.NewTime(t0.Add(30 * time.Second))
	cases := []struct {
		name     string
		pod      *corev1.Pod
		node     *Node
		state    State
		reason   string
		exitCode int32
	}{
		{"just created", agentPod(corev1.PodPending, corev1.ContainerState{}), nil, Pending, "PodPending", 0},
		{"no status yet", &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent"}}}}, nil, Pending, "PodPending", 0},
		{"running", agentPod(corev1.PodRunning, running), nil, Running, "PodRunning", 0},
		{"exit 1", agentPod(corev1.PodFailed, terminated(1, "Error")), nil, Crashed, parleyv1alpha1.AgentFailureError, 1},
		{"agent exit 2 while a sidecar still runs", agentPod(corev1.PodRunning, terminated(2, "Error")), nil, Crashed, parleyv1alpha1.AgentFailureError, 2},
		{"OOMKilled", agentPod(corev1.PodFailed, terminated(137, "OOMKilled")), nil, Crashed, parleyv1alpha1.AgentFailureOOMKilled, 137},
		{"exit 0 is done", agentPod(corev1.PodSucceeded, terminated(0, "Completed")), nil, Completed, "Completed", 0},
		{"agent exit 0 while a sidecar runs", agentPod(corev1.PodRunning, terminated(0, "Completed")), nil, Completed, "Completed", 0},
		{"evicted by the kubelet: its kill is not the agent's exit", with(agentPod(corev1.PodFailed, terminated(137, "Error")), func(p *corev1.Pod) {
			p.Status.Reason, p.Status.Message = "Evicted", "The node was low on resource: memory."
		}), nil, Crashed, parleyv1alpha1.AgentFailureEvicted, 137},
		{"evicted through the API", with(agentPod(corev1.PodFailed, terminated(143, "Error")), func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"}}
		}), nil, Crashed, parleyv1alpha1.AgentFailureEvicted, 143},
		{"preempted", with(agentPod(corev1.PodRunning, running), func(p *corev1.Pod) {
			p.DeletionTimestamp = &deleting
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"}}
		}), nil, Crashed, parleyv1alpha1.AgentFailurePreempted, 0},
		{"deadline exceeded", with(agentPod(corev1.PodFailed, terminated(137, "Error")), func(p *corev1.Pod) {
			p.Status.Reason = "DeadlineExceeded"
		}), nil, Crashed, "DeadlineExceeded", 137},
		{"deleted by someone", with(agentPod(corev1.PodRunning, running), func(p *corev1.Pod) { p.DeletionTimestamp = &deleting }), nil, Crashed, parleyv1alpha1.AgentFailureDeleted, 0},
		{"deleted: exit 0 on SIGTERM is still a crash", with(agentPod(corev1.PodSucceeded, terminated(0, "Completed")), func(p *corev1.Pod) { p.DeletionTimestamp = &deleting }), nil, Crashed, parleyv1alpha1.AgentFailureDeleted, 0},
		{"taint manager deleted it", with(agentPod(corev1.PodRunning, running), func(p *corev1.Pod) {
			p.DeletionTimestamp = &deleting
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
		}), nil, Crashed, parleyv1alpha1.AgentFailureNodeLost, 0},
		{"node NotReady past the grace", agentPod(corev1.PodRunning, running), &Node{Ready: corev1.ConditionUnknown, Since: t0.Add(-2 * time.Minute)}, Crashed, parleyv1alpha1.AgentFailureNodeLost, 0},
		{"node NotReady within the grace", agentPod(corev1.PodRunning, running), &Node{Ready: corev1.ConditionFalse, Since: t0.Add(-30 * time.Second)}, Running, "PodRunning", 0},
		{"node gone", agentPod(corev1.PodRunning, running), &Node{Gone: true}, Crashed, parleyv1alpha1.AgentFailureNodeLost, 0},
		{"node Ready", agentPod(corev1.PodRunning, running), &Node{Ready: corev1.ConditionTrue, Since: t0.Add(-time.Hour)}, Running, "PodRunning", 0},
		{"image pull back-off is not a crash", agentPod(corev1.PodPending, waiting("ImagePullBackOff")), nil, Blocked, parleyv1alpha1.ReasonImagePullFailed, 0},
		{"invalid image name", agentPod(corev1.PodPending, waiting("InvalidImageName")), nil, Blocked, parleyv1alpha1.ReasonImagePullFailed, 0},
		{"init container cannot pull", with(agentPod(corev1.PodPending, corev1.ContainerState{}), func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: waiting("ErrImagePull")}}
		}), nil, Blocked, parleyv1alpha1.ReasonImagePullFailed, 0},
		{"missing secret key", agentPod(corev1.PodPending, waiting("CreateContainerConfigError")), nil, Blocked, parleyv1alpha1.ReasonContainerConfigInvalid, 0},
		{"unschedulable", with(agentPod(corev1.PodPending, corev1.ContainerState{}), func(p *corev1.Pod) {
			p.Spec.NodeName = ""
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available"}}
		}), nil, Blocked, parleyv1alpha1.ReasonPodUnschedulable, 0},
		{"container creating", agentPod(corev1.PodPending, waiting("ContainerCreating")), nil, Pending, "PodPending", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.pod, tc.node, t0, time.Minute)
			if got.State != tc.state || got.Reason != tc.reason || got.ExitCode != tc.exitCode {
				t.Fatalf("Classify = %s/%s exit %d, want %s/%s exit %d (%+v)", got.State, got.Reason, got.ExitCode, tc.state, tc.reason, tc.exitCode, got)
			}
			if got.State == Crashed && got.At.IsZero() {
				t.Error("a crash has no time")
			}
		})
	}
}

func TestClassifyKeepsTheMessageShortAndValid(t *testing.T) {
	p := agentPod(corev1.PodFailed, terminated(1, "Error"))
	p.Status.ContainerStatuses[1].State.Terminated.Message = strings.Repeat("é", MaxMessage)
	got := Classify(p, nil, t0, time.Minute)
	if len(got.Message) > MaxMessage || !strings.HasPrefix(got.Message, "éé") || strings.ContainsRune(got.Message, '\uFFFD') {
		t.Fatalf("message of %d bytes, valid %v", len(got.Message), !strings.ContainsRune(got.Message, '\uFFFD'))
	}
	if got.At != t0.Add(-time.Second) {
		t.Errorf("At = %v, want the container's finishedAt", got.At)
	}
}
