package envtest

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/test/support/operatorenv"
	"github.com/parley-dev/parley/test/support/specwatch"
)

// watchSpec records every version of conv the API server sends a watch, so a spec can prove
// the controller never wrote its spec.
func watchSpec(conv *parleyv1alpha1.Conversation) *specwatch.Watch {
	w, err := specwatch.Start(ctx, dynamic.NewForConfigOrDie(env.Config),
		parleyv1alpha1.GroupVersion.WithResource("conversations"), conv.Namespace, conv.Name)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	return w
}

var _ = Describe("Idle agents", func() {
	It("suspends an agent that waits for a person, wakes it with the next message, and never writes spec", func() {
		ns := env.AgentNamespace()
		conv := newConversation(parleyv1alpha1.ConversationSpec{Agent: agentSpec(func(a *parleyv1alpha1.AgentSpec) {
			a.Idle = &parleyv1alpha1.IdleSpec{SuspendAfter: metav1.Duration{Duration: time.Second}}
		})})
		conv.Namespace = ns
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		watch := watchSpec(conv)
		Eventually(historyReady(conv)).Should(Succeed())
		person, err := parleyclient.New(parleyclient.Options{URL: env.SessionURL, Token: env.AgentToken(ns, "agent", nil), Retries: -1})
		Expect(err).NotTo(HaveOccurred())

		By("the agent works on a question: its pod runs however long")
		first := agentPod(conv, 1)
		kubelet(first, corev1.PodRunning, runningState())
		_, err = person.Append(ctx, ns, conv.Name, []conversation.Message{operatorenv.TextMessage("u1", "user", "hello")})
		Expect(err).NotTo(HaveOccurred())
		// The kubelet's status reaches the condition through a reconcile: wait for it, then hold it.
		Eventually(agentCondition(conv, metav1.ConditionTrue, parleyv1alpha1.ReasonPodRunning)).Should(Succeed())
		Consistently(agentCondition(conv, metav1.ConditionTrue, parleyv1alpha1.ReasonPodRunning)).WithTimeout(2 * time.Second).Should(Succeed())

		By("it answers and waits: after suspendAfter its pod is stopped, nothing counted as a crash")
		_, err = person.Append(ctx, ns, conv.Name, []conversation.Message{operatorenv.TextMessage("a1", "assistant", "hi")})
		Expect(err).NotTo(HaveOccurred())
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonIdle)).Should(Succeed())
		Eventually(func() error { return k8sClient.Get(ctx, clientKey(first), &corev1.Pod{}) }).Should(Satisfy(apierrors.IsNotFound))
		Consistently(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Agent.Attempt).To(Equal(int32(1)))
			g.Expect(conv.Status.Agent.PodName).To(BeEmpty())
			g.Expect(conv.Status.Agent.Restarts).To(BeZero())
			g.Expect(conv.Status.Agent.LastFailure).To(BeNil())
			g.Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationActive))
			g.Expect(conv.AgentAsleep()).To(BeTrue())
		}).WithTimeout(time.Second).Should(Succeed())
		ckpts := &parleyv1alpha1.CheckpointList{}
		Expect(k8sClient.List(ctx, ckpts, client.InNamespace(ns))).To(Succeed())
		Expect(ckpts.Items).To(BeEmpty(), "no Crash Checkpoint")
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElement(parleyv1alpha1.EventAgentSuspended))

		By("a person's message wakes it: a new pod resumes with the message in its bundle")
		_, err = person.Append(ctx, ns, conv.Name, []conversation.Message{operatorenv.TextMessage("u2", "user", "are you there?")})
		Expect(err).NotTo(HaveOccurred())
		second := agentPod(conv, 2)
		Expect(envOf(second)).To(HaveKeyWithValue(agentpod.EnvResume, "true"))
		m := mountedManifest(second)
		Expect(m.State.Messages).NotTo(BeEmpty())
		Expect(m.State.Messages[len(m.State.Messages)-1].ID).To(Equal("u2"))
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElement(parleyv1alpha1.EventAgentWoken))
		fetch(conv)(Default)
		Expect(conv.Status.Agent.Restarts).To(BeZero())

		Expect(watch.Unchanged(4)).To(Succeed(), "the watch saw the status writes, and no spec write")
	})

	It("lets a manual suspend win over a message, and wakes the agent once resumed", func() {
		ns := env.AgentNamespace()
		conv := newConversation(parleyv1alpha1.ConversationSpec{Agent: agentSpec(func(a *parleyv1alpha1.AgentSpec) {
			a.Idle = &parleyv1alpha1.IdleSpec{SuspendAfter: metav1.Duration{Duration: 500 * time.Millisecond}}
		})})
		conv.Namespace = ns
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		person, err := parleyclient.New(parleyclient.Options{URL: env.SessionURL, Token: env.AgentToken(ns, "agent", nil), Retries: -1})
		Expect(err).NotTo(HaveOccurred())
		kubelet(agentPod(conv, 1), corev1.PodRunning, runningState())
		_, err = person.Append(ctx, ns, conv.Name, []conversation.Message{operatorenv.TextMessage("u1", "user", "q"), operatorenv.TextMessage("a1", "assistant", "a")})
		Expect(err).NotTo(HaveOccurred())
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonIdle)).Should(Succeed())

		Eventually(func(g Gomega) {
			fetch(conv)(g)
			conv.Spec.Suspend = ptrTo(true)
			g.Expect(k8sClient.Update(ctx, conv)).To(Succeed())
		}).Should(Succeed())
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonSuspended)).Should(Succeed())
		_, err = person.Append(ctx, ns, conv.Name, []conversation.Message{operatorenv.TextMessage("u2", "user", "wake up")})
		Expect(err).NotTo(HaveOccurred())
		Consistently(func() error {
			return k8sClient.Get(ctx, clientKey(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentpod.PodName(conv.Name, 2)}}), &corev1.Pod{})
		}).WithTimeout(2 * time.Second).Should(Satisfy(apierrors.IsNotFound))

		Eventually(func(g Gomega) {
			fetch(conv)(g)
			conv.Spec.Suspend = ptrTo(false)
			g.Expect(k8sClient.Update(ctx, conv)).To(Succeed())
		}).Should(Succeed())
		m := mountedManifest(agentPod(conv, 2))
		Expect(m.State.Messages[len(m.State.Messages)-1].ID).To(Equal("u2"))
	})
})
