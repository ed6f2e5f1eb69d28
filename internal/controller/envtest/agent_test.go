package envtest

import (
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/bundle"
)

// envtest has no kubelet: these specs play its part by writing pod status, the way the kubelet
// reports a start, an exit, an OOM kill or an eviction. The real node is in test/e2e.

func agentSpec(mutate ...func(*parleyv1alpha1.AgentSpec)) *parleyv1alpha1.AgentSpec {
	a := &parleyv1alpha1.AgentSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "agent", Image: "example.com/agent:1"}},
		}},
		MaxRestarts: ptrTo(int32(3)),
		Backoff:     parleyv1alpha1.BackoffSpec{Initial: &metav1.Duration{Duration: 200 * time.Millisecond}, Max: &metav1.Duration{Duration: time.Second}},
	}
	for _, m := range mutate {
		m(a)
	}
	return a
}

func agentPod(conv *parleyv1alpha1.Conversation, attempt int32) *corev1.Pod {
	pod := &corev1.Pod{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, clientKey(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: conv.Namespace, Name: agentpod.PodName(conv.Name, attempt),
		}}), pod)).To(Succeed())
	}).Should(Succeed(), "agent pod of attempt %d", attempt)
	return pod
}

// kubelet writes a pod status as the kubelet would.
func kubelet(pod *corev1.Pod, phase corev1.PodPhase, agent corev1.ContainerState, mutate ...func(*corev1.PodStatus)) {
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, clientKey(pod), pod)).To(Succeed())
		pod.Status.Phase = phase
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", Image: "example.com/agent:1", ImageID: "sha256:1", State: agent}}
		for _, m := range mutate {
			m(&pod.Status)
		}
		g.Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
	}).Should(Succeed())
}

func runningState() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
}

func exitState(code int32, reason string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, StartedAt: metav1.Now(), FinishedAt: metav1.Now(),
	}}
}

func agentCondition(conv *parleyv1alpha1.Conversation, status metav1.ConditionStatus, reason string) func(g Gomega) {
	return func(g Gomega) {
		fetch(conv)(g)
		c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionAgentRunning)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		g.Expect(c.Status).To(Equal(status), c.Message)
	}
}

// mountedManifest reads conversation.json from the bundle ConfigMap the pod mounts.
func mountedManifest(pod *corev1.Pod) bundle.Manifest {
	var vol *corev1.ConfigMapVolumeSource
	for _, v := range pod.Spec.Volumes {
		if v.Name == agentpod.VolumeBundle {
			vol = v.ConfigMap
		}
	}
	Expect(vol).NotTo(BeNil())
	cm := &corev1.ConfigMap{}
	Expect(k8sClient.Get(ctx, clientKey(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: vol.Name}}), cm)).To(Succeed())
	Expect(cm.Immutable).To(HaveValue(BeTrue()))
	for _, item := range vol.Items {
		if item.Path == bundle.ConversationFile {
			var m bundle.Manifest
			Expect(json.Unmarshal([]byte(cm.Data[item.Key]), &m)).To(Succeed())
			return m
		}
	}
	Fail("no conversation.json in the bundle")
	return bundle.Manifest{}
}

// mountedFile reads one file of the bundle ConfigMap the pod mounts, by its path in the mount.
func mountedFile(pod *corev1.Pod, path string) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name != agentpod.VolumeBundle {
			continue
		}
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, clientKey(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: v.ConfigMap.Name}}), cm)).To(Succeed())
		for _, item := range v.ConfigMap.Items {
			if item.Path == path {
				return cm.Data[item.Key]
			}
		}
	}
	Fail("no " + path + " in the bundle")
	return ""
}

func envOf(pod *corev1.Pod) map[string]string {
	m := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		m[e.Name] = e.Value
	}
	return m
}

var _ = Describe("Agent pods", func() {
	It("starts the agent with the bundle, and after exit 1 resumes it in a new pod at the last complete turn", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{Agent: agentSpec()})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())

		By("the first pod: owned, restartPolicy Never, bundle and token mounted, PARLEY_RESUME=false")
		first := agentPod(conv, 1)
		Expect(metav1.IsControlledBy(first, conv)).To(BeTrue())
		Expect(first.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		env := envOf(first)
		Expect(env).To(HaveKeyWithValue(agentpod.EnvResume, "false"))
		Expect(env).To(HaveKeyWithValue(agentpod.EnvSessionID, conv.Status.SessionID))
		Expect(env).To(HaveKeyWithValue(agentpod.EnvConversation, conv.Name))
		Expect(env).To(HaveKeyWithValue(agentpod.EnvAPIURL, "https://parley-session-api.parley-system.svc:8082"))
		Expect(mountedManifest(first).Messages).To(Equal(0))
		By("the Session API's CA travels in the bundle, named by PARLEY_CA_FILE")
		Expect(env).To(HaveKeyWithValue(agentpod.EnvCAFile, "/var/run/parley/"+agentpod.CAFile))
		Expect(mountedFile(first, agentpod.CAFile)).To(Equal(string(agentCA)))
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonPodPending)).Should(Succeed())
		Expect(conv.Status.Agent.PodName).To(Equal(first.Name))

		kubelet(first, corev1.PodRunning, runningState())
		Eventually(agentCondition(conv, metav1.ConditionTrue, parleyv1alpha1.ReasonPodRunning)).Should(Succeed())
		Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationActive))

		By("the agent converses: three complete turns, then a user message whose turn never completes")
		appendMessages(conv, 0, 7)
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.History.Messages).To(Equal(int64(7)))
		}).Should(Succeed())

		By("the agent container exits 1")
		kubelet(first, corev1.PodFailed, exitState(1, "Error"))
		second := agentPod(conv, 2)
		Expect(envOf(second)).To(HaveKeyWithValue(agentpod.EnvResume, "true"))
		Expect(envOf(second)).To(HaveKeyWithValue(agentpod.EnvResumeAttempt, "1"))
		crash := fmt.Sprintf("%s-crash-1", conv.Name)
		Expect(envOf(second)).To(HaveKeyWithValue(agentpod.EnvCheckpoint, crash))
		m := mountedManifest(second)
		Expect(m.Messages).To(Equal(6), "every message up to the last complete turn")
		Expect(m.Turns).To(Equal(3))
		Expect(m.SessionID).To(Equal(conv.Status.SessionID))

		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Agent.PodName).To(Equal(second.Name))
			g.Expect(conv.Status.Agent.Restarts).To(Equal(int32(1)))
			g.Expect(conv.Status.Agent.ResumedFrom).To(Equal(crash))
			g.Expect(conv.Status.Agent.LastFailure).NotTo(BeNil())
			g.Expect(conv.Status.Agent.LastFailure.Reason).To(Equal("Error"))
			g.Expect(conv.Status.Agent.LastFailure.ExitCode).To(Equal(int32(1)))
			g.Expect(conv.Status.Agent.LastFailure.Turn).To(Equal(int64(4)))
			g.Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationRecovering))
		}).Should(Succeed())
		ckpt := &parleyv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Namespace: conv.Namespace, Name: crash}}
		Eventually(checkpointReady(ckpt)).Should(Succeed())
		Expect(ckpt.Spec.Reason).To(Equal(parleyv1alpha1.CheckpointCrash))
		Expect(ckpt.Status.Messages).To(Equal(int64(6)))
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElements(parleyv1alpha1.EventAgentCrashed, parleyv1alpha1.EventAgentRestarted))

		kubelet(second, corev1.PodRunning, runningState())
		Eventually(agentCondition(conv, metav1.ConditionTrue, parleyv1alpha1.ReasonPodRunning)).Should(Succeed())
		Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationActive))
	})

	It("classifies OOMKilled and Evicted, spends no restart on an image pull error, and fails after maxRestarts", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{Agent: agentSpec(func(a *parleyv1alpha1.AgentSpec) { a.MaxRestarts = ptrTo(int32(2)) })})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())

		By("an image that cannot be pulled: reported, no restart")
		first := agentPod(conv, 1)
		kubelet(first, corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "back-off pulling image"}})
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonImagePullFailed)).Should(Succeed())
		Consistently(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Agent.Restarts).To(BeZero())
			g.Expect(conv.Status.Agent.PodName).To(Equal(first.Name))
		}).WithTimeout(time.Second).Should(Succeed())

		By("OOMKilled")
		kubelet(first, corev1.PodFailed, exitState(137, "OOMKilled"))
		second := agentPod(conv, 2)
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Agent.LastFailure).NotTo(BeNil())
			g.Expect(conv.Status.Agent.LastFailure.Reason).To(Equal("OOMKilled"))
			g.Expect(conv.Status.Agent.LastFailure.ExitCode).To(Equal(int32(137)))
		}).Should(Succeed())

		By("Evicted by the kubelet")
		kubelet(second, corev1.PodFailed, exitState(137, "Error"), func(s *corev1.PodStatus) {
			s.Reason, s.Message = "Evicted", "The node was low on resource: memory."
		})
		third := agentPod(conv, 3)
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Agent.LastFailure.Reason).To(Equal("Evicted"))
			g.Expect(conv.Status.Agent.Restarts).To(Equal(int32(2)))
		}).Should(Succeed())

		By("a third crash after two restarts: Failed, MaxRestartsExceeded")
		appendMessages(conv, 0, 2) // progress, so this is not a poison turn
		kubelet(third, corev1.PodFailed, exitState(2, "Error"))
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonMaxRestartsExceeded)).Should(Succeed())
		Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationFailed))
		Consistently(func() error {
			return k8sClient.Get(ctx, clientKey(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: conv.Namespace, Name: agentpod.PodName(conv.Name, 4)}}), &corev1.Pod{})
		}).WithTimeout(time.Second).Should(Satisfy(apierrors.IsNotFound))
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElement(parleyv1alpha1.EventAgentFailed))
	})

	It("stops at a poison turn: three crashes in a row at the same turn", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{Agent: agentSpec(func(a *parleyv1alpha1.AgentSpec) { a.MaxRestarts = ptrTo(int32(10)) })})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		appendMessages(conv, 0, 5) // two complete turns, the third begun
		for attempt := int32(1); attempt <= 3; attempt++ {
			kubelet(agentPod(conv, attempt), corev1.PodFailed, exitState(1, "Error"))
		}
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonPoisonTurn)).Should(Succeed())
		c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionAgentRunning)
		Expect(c.Message).To(ContainSubstring("at turn 3"))
		Expect(conv.Status.Agent.FailuresAtTurn).To(Equal(int32(3)))
		Expect(conv.Status.Agent.Restarts).To(Equal(int32(2)))
		Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationFailed))
	})

	It("does not restart an agent that exited 0, restarts one whose pod was deleted, and suspends and resumes", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{Agent: agentSpec()})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())

		By("someone deletes the running pod: a crash, Deleted")
		first := agentPod(conv, 1)
		kubelet(first, corev1.PodRunning, runningState())
		Eventually(agentCondition(conv, metav1.ConditionTrue, parleyv1alpha1.ReasonPodRunning)).Should(Succeed())
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		second := agentPod(conv, 2)
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Agent.LastFailure).NotTo(BeNil())
			g.Expect(conv.Status.Agent.LastFailure.Reason).To(Equal("Deleted"))
		}).Should(Succeed())

		By("suspend: the pod is removed, not counted as a crash")
		kubelet(second, corev1.PodRunning, runningState())
		Eventually(agentCondition(conv, metav1.ConditionTrue, parleyv1alpha1.ReasonPodRunning)).Should(Succeed())
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			conv.Spec.Suspend = ptrTo(true)
			g.Expect(k8sClient.Update(ctx, conv)).To(Succeed())
		}).Should(Succeed())
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonSuspended)).Should(Succeed())
		Eventually(func() error { return k8sClient.Get(ctx, clientKey(second), &corev1.Pod{}) }).Should(Satisfy(apierrors.IsNotFound))
		Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationSuspended))
		Expect(conv.Status.Agent.Restarts).To(Equal(int32(1)))

		By("resume: the next attempt starts with the bundle")
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			conv.Spec.Suspend = ptrTo(false)
			g.Expect(k8sClient.Update(ctx, conv)).To(Succeed())
		}).Should(Succeed())
		third := agentPod(conv, 3)
		Expect(envOf(third)).To(HaveKeyWithValue(agentpod.EnvResume, "true"))

		By("exit 0: Completed, not restarted")
		kubelet(third, corev1.PodSucceeded, exitState(0, "Completed"))
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonCompleted)).Should(Succeed())
		Consistently(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Agent.PodName).To(Equal(third.Name))
			g.Expect(conv.Status.Agent.Restarts).To(Equal(int32(1)))
		}).WithTimeout(time.Second).Should(Succeed())
	})

	It("refuses a template that mounts something at resumeMountPath, with a condition naming the field", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{Agent: agentSpec(func(a *parleyv1alpha1.AgentSpec) {
			a.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/var/run/parley"}}
			a.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		})})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonTemplateConflict)).Should(Succeed())
		c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionAgentRunning)
		Expect(c.Message).To(ContainSubstring("spec.agent.template.spec.containers[0].volumeMounts[0].mountPath"))
		Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationFailed))
		Expect(k8sClient.Get(ctx, clientKey(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: conv.Namespace, Name: agentpod.PodName(conv.Name, 1)}}), &corev1.Pod{})).
			To(Satisfy(apierrors.IsNotFound))
	})
})
