package envtest

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
)

// The manager's own Checkpoints under a ResourceQuota on count/checkpoints.parley.dev, as
// docs/security.md advises. The quota's status is the spec's to write (operatorenv.CheckpointQuota).

// quotaNamespace is a new namespace with a quota of hard Checkpoints.
func quotaNamespace(hard int) (string, *corev1.ResourceQuota) {
	ns := "quota-" + randSuffix()
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	return ns, env.CheckpointQuota(ns, hard)
}

// refusedEvents are the CheckpointRefused events on obj.
func refusedEvents(obj client.Object) []eventsv1.Event {
	evs := &eventsv1.EventList{}
	Expect(k8sClient.List(ctx, evs, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var out []eventsv1.Event
	for _, ev := range evs.Items {
		if ev.Regarding.UID == obj.GetUID() && ev.Reason == parleyv1alpha1.EventCheckpointRefused {
			out = append(out, ev)
		}
	}
	return out
}

// refusedOnce passes while obj has exactly one CheckpointRefused event, never repeated (the
// event recorder turns a repeat into a series on the same Event at once).
func refusedOnce(obj client.Object) {
	evs := refusedEvents(obj)
	Expect(evs).To(HaveLen(1))
	Expect(evs[0].Type).To(Equal(corev1.EventTypeWarning))
	Expect(evs[0].Series).To(BeNil(), "the refusal was announced again")
	Expect(evs[0].Note).To(ContainSubstring("exceeded quota: parley-checkpoints"))
}

// degradedBy is the reason of Degraded=True, "" when the session is not degraded.
func degradedBy(conv *parleyv1alpha1.Conversation) func(g Gomega) string {
	return func(g Gomega) string {
		fetch(conv)(g)
		if c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
			return c.Reason
		}
		return ""
	}
}

// conversationIn creates a Conversation of spec in ns, seeded from the fixture transcript when
// seeded, and waits for its history.
func conversationIn(ns string, seeded bool, spec parleyv1alpha1.ConversationSpec) *parleyv1alpha1.Conversation {
	if seeded {
		cm, _ := seedConfigMap("quota-seed-" + randSuffix())
		cm.Namespace = ns
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		spec.Seed = &parleyv1alpha1.SeedSource{ConfigMapKeyRef: parleyv1alpha1.ConfigMapKeyReference{Name: cm.Name, Key: "transcript.jsonl"}}
	}
	conv := newConversation(spec)
	conv.Namespace = ns
	Expect(k8sClient.Create(ctx, conv)).To(Succeed())
	Eventually(historyReady(conv)).Should(Succeed())
	return conv
}

// retried waits until the controller reconciled conv n more times.
func retried(conv *parleyv1alpha1.Conversation, n int64) {
	from := reconcileCount(conv)
	Eventually(func() int64 { return reconcileCount(conv) }).Should(BeNumerically(">=", from+n))
}

var _ = Describe("Checkpoints at a full ResourceQuota", func() {
	It("warns once per refusal, still prunes past keep, and takes the Checkpoint once there is room", func() {
		ns, quota := quotaNamespace(2)
		conv := conversationIn(ns, true, parleyv1alpha1.ConversationSpec{
			Checkpoints: &parleyv1alpha1.CheckpointPolicy{EveryTurns: ptrTo(int32(1)), Keep: ptrTo(int32(3))},
		})
		turns := conv.Status.History.Turns

		By("a Scheduled and a Manual Checkpoint fill the quota")
		scheduled := &parleyv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-turn-%d", conv.Name, turns)}}
		Eventually(checkpointReady(scheduled)).Should(Succeed())
		manual := newCheckpoint(conv, conv.Name+"-manual")
		manual.Spec.Reason = parleyv1alpha1.CheckpointManual
		Expect(k8sClient.Create(ctx, manual)).To(Succeed())
		Eventually(checkpointReady(manual)).Should(Succeed())
		Expect(env.CheckpointsUsed(quota)).To(Equal(int64(2)))

		By("a new turn: its Scheduled Checkpoint is refused, Degraded and one Warning say why")
		appendMessages(conv, 0, 2)
		Eventually(degradedBy(conv)).Should(Equal(parleyv1alpha1.ReasonCheckpointRefused))
		next := fmt.Sprintf("%s-turn-%d", conv.Name, turns+1)
		c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionDegraded)
		Expect(c.Message).To(ContainSubstring("Scheduled Checkpoint " + next))
		Expect(c.Message).To(ContainSubstring("exceeded quota: parley-checkpoints"))
		Eventually(func() []eventsv1.Event { return refusedEvents(conv) }).ShouldNot(BeEmpty())
		retried(conv, 3)
		refusedOnce(conv)
		Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationActive), "a refused Checkpoint does not stop the session")

		By("keep lowered to 1: one goes although the new one is still refused, the newest Ready stays")
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			conv.Spec.Checkpoints.Keep = ptrTo(int32(1))
			g.Expect(k8sClient.Update(ctx, conv)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			list := &parleyv1alpha1.CheckpointList{}
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1), "the Checkpoint past keep was not pruned")
			fetch(conv)(g)
			g.Expect(list.Items[0].Name).To(Equal(conv.Status.LatestCheckpoint))
		}).Should(Succeed())
		Expect(eventReasons(conv)).To(ContainElement(parleyv1alpha1.EventCheckpointPruned))
		retried(conv, 2)
		Expect(degradedBy(conv)(Default)).To(Equal(parleyv1alpha1.ReasonCheckpointRefused))
		refusedOnce(conv)

		By("the quota counts the deletion (its controller's part): the Checkpoint is taken, Degraded clears")
		env.SetCheckpointsUsed(quota, 1)
		Eventually(checkpointReady(&parleyv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: next}})).Should(Succeed())
		Eventually(degradedBy(conv)).Should(BeEmpty())
		refusedOnce(conv)
	})

	It("makes a due compaction say it waits for room, and compacts once the quota allows", func() {
		ns, quota := quotaNamespace(0)
		conv := conversationIn(ns, false, parleyv1alpha1.ConversationSpec{Context: compactionContext(parleyv1alpha1.CompactionSlidingWindow)})
		epoch := conv.Status.History.Epoch

		appendMessages(conv, 0, 60)
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			c := compacting(conv)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(parleyv1alpha1.ReasonWaitingForCheckpoint), c.Message)
			g.Expect(c.Message).To(ContainSubstring("waiting for room for Checkpoint %s-compact-e%d", conv.Name, epoch))
			g.Expect(c.Message).To(ContainSubstring("exceeded quota: parley-checkpoints"))
		}).Should(Succeed())
		Expect(degradedBy(conv)(Default)).To(Equal(parleyv1alpha1.ReasonCheckpointRefused))
		retried(conv, 3)
		refusedOnce(conv)

		By("the quota raised")
		env.RaiseCheckpointQuota(quota, 5)
		Eventually(compactedTo(conv, epoch+1)).WithTimeout(60 * time.Second).Should(Succeed())
		Expect(degradedBy(conv)(Default)).To(BeEmpty())
	})

	It("keeps an expired Archive session's live history until its final Checkpoint is admitted", func() {
		ns, quota := quotaNamespace(0)
		conv := conversationIn(ns, true, parleyv1alpha1.ConversationSpec{Lifetime: parleyv1alpha1.LifetimeSpec{
			TTL: &metav1.Duration{Duration: 3 * time.Second}, ExpirationPolicy: parleyv1alpha1.ExpirationPolicyArchive,
		}})
		final := conv.Name + "-archive"

		Eventually(func(g Gomega) {
			fetch(conv)(g)
			c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionExpired)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(ContainSubstring("the live history is kept until the final Checkpoint " + final + " is admitted"))
			g.Expect(c.Message).To(ContainSubstring("exceeded quota: parley-checkpoints"))
		}).Should(Succeed())
		Expect(degradedBy(conv)(Default)).To(Equal(parleyv1alpha1.ReasonCheckpointRefused))
		Expect(meta.IsStatusConditionTrue(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)).To(BeTrue(),
			"the store is fine: HistoryAvailable stays True")
		retried(conv, 3)
		refusedOnce(conv)

		By("the quota raised: the final Checkpoint, then the archive")
		env.RaiseCheckpointQuota(quota, 5)
		Eventually(historyUnavailable(conv, parleyv1alpha1.ReasonHistoryArchived)).Should(Succeed())
		Expect(conv.Status.LatestCheckpoint).To(Equal(final))
		Expect(degradedBy(conv)(Default)).To(BeEmpty())
	})

	It("restarts a crashed agent although its Crash Checkpoint is refused", func() {
		ns, _ := quotaNamespace(0)
		conv := conversationIn(ns, false, parleyv1alpha1.ConversationSpec{Agent: agentSpec()})
		first := agentPod(conv, 1)
		kubelet(first, corev1.PodRunning, runningState())
		appendMessages(conv, 0, 7)
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.History.Messages).To(Equal(int64(7)))
		}).Should(Succeed())

		kubelet(first, corev1.PodFailed, exitState(1, "Error"))
		second := agentPod(conv, 2)
		Expect(envOf(second)).To(HaveKeyWithValue(agentpod.EnvResume, "true"))
		Expect(envOf(second)).To(HaveKeyWithValue(agentpod.EnvCheckpoint, ""), "the pod names a Checkpoint that was refused")
		Expect(mountedManifest(second).Messages).To(Equal(6), "the bundle is cut at the last complete turn all the same")
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Agent.PodName).To(Equal(second.Name))
			g.Expect(conv.Status.Agent.ResumedFrom).To(BeEmpty())
		}).Should(Succeed())
		Eventually(func() []eventsv1.Event { return refusedEvents(conv) }).ShouldNot(BeEmpty())
		refusedOnce(conv)
		Expect(refusedEvents(conv)[0].Note).To(ContainSubstring("Crash Checkpoint " + conv.Name + "-crash-1"))
		crash := &parleyv1alpha1.Checkpoint{}
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: conv.Name + "-crash-1"}, crash))).To(BeTrue())
	})
})
