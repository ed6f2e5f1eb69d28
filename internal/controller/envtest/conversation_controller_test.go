package envtest

import (
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/controller"
	"github.com/parley-dev/parley/internal/metrics"
)

var _ = Describe("Conversation controller on a real apiserver", func() {
	It("mints a UUID v4 session, computes expiresAt from the ttl and marks the session Active", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			Lifetime: parleyv1alpha1.LifetimeSpec{TTL: &metav1.Duration{Duration: 2 * time.Hour}},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())

		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.SessionID).NotTo(BeEmpty())
			g.Expect(conv.Status.ObservedGeneration).To(Equal(conv.Generation))
			g.Expect(meta.IsStatusConditionTrue(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)).To(BeTrue())
		}).Should(Succeed())

		id, err := uuid.Parse(conv.Status.SessionID)
		Expect(err).NotTo(HaveOccurred())
		Expect(id.Version()).To(Equal(uuid.Version(5)))
		Expect(conv.Status.SessionID).To(Equal(controller.SessionIDFor(conv.UID)))
		Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationActive))
		Expect(conv.Status.ExpiresAt.Time).To(BeTemporally("==", conv.CreationTimestamp.Add(2*time.Hour)))
		Expect(meta.IsStatusConditionTrue(conv.Status.Conditions, parleyv1alpha1.ConditionReady)).To(BeTrue())
		hist := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
		Expect(hist).NotTo(BeNil())
		Expect(hist.Reason).To(Equal(parleyv1alpha1.ReasonHistoryReady))
		Expect(conv.Status.History.Location).To(Equal("configmap://default/" + conv.Name + "-" + conv.Status.SessionID + "-history"))

		By("keeping the same session id on later reconciles")
		minted := conv.Status.SessionID
		setTTL(conv, 3*time.Hour)
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.ObservedGeneration).To(Equal(conv.Generation))
			g.Expect(conv.Status.ExpiresAt.Time).To(BeTemporally("==", conv.CreationTimestamp.Add(3*time.Hour)))
		}).Should(Succeed())
		Expect(conv.Status.SessionID).To(Equal(minted))
	})

	It("uses a pinned session id", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{SessionID: "6f1c2b8e-3d4a-4e5f-9a7b-1c2d3e4f5a6b"})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.SessionID).To(Equal("6f1c2b8e-3d4a-4e5f-9a7b-1c2d3e4f5a6b"))
		}).Should(Succeed())
	})

	It("expires a session when its ttl is reached, without a periodic scan, and says why", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			Lifetime: parleyv1alpha1.LifetimeSpec{TTL: &metav1.Duration{Duration: 3 * time.Second}},
		})
		expiredBefore := testutil.ToFloat64(metrics.Expirations.WithLabelValues(parleyv1alpha1.ReasonTTLExceeded))
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationActive))
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationExpired))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		cond := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionExpired)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		Expect(cond.Reason).To(Equal(parleyv1alpha1.ReasonTTLExceeded))
		Expect(cond.Message).To(ContainSubstring("ttl 3s reached"))
		Expect(meta.IsStatusConditionFalse(conv.Status.Conditions, parleyv1alpha1.ConditionReady)).To(BeTrue())
		// The transition happened no earlier than the expiry instant.
		Expect(cond.LastTransitionTime.Time).To(BeTemporally(">=", conv.Status.ExpiresAt.Add(-time.Second)))

		By("counting the expiry by reason")
		Eventually(func() float64 {
			return testutil.ToFloat64(metrics.Expirations.WithLabelValues(parleyv1alpha1.ReasonTTLExceeded))
		}).Should(BeNumerically(">", expiredBefore))

		By("recording an Expired event on the object")
		Eventually(func(g Gomega) {
			evs := &eventsv1.EventList{}
			g.Expect(k8sClient.List(ctx, evs, client.InNamespace(conv.Namespace))).To(Succeed())
			var reasons []string
			for _, e := range evs.Items {
				if e.Regarding.UID == conv.UID {
					reasons = append(reasons, e.Reason)
				}
			}
			g.Expect(reasons).To(ContainElements(parleyv1alpha1.EventSessionStarted, parleyv1alpha1.EventExpired))
		}).Should(Succeed())
	})

	It("expires an idle session with reason IdleTimeout", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			Lifetime: parleyv1alpha1.LifetimeSpec{IdleTimeout: &metav1.Duration{Duration: 2 * time.Second}},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			cond := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionExpired)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Reason).To(Equal(parleyv1alpha1.ReasonIdleTimeout))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("deletes an expired Conversation after lifetime.deleteAfter", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			Lifetime: parleyv1alpha1.LifetimeSpec{
				TTL:         &metav1.Duration{Duration: 2 * time.Second},
				DeleteAfter: &metav1.Duration{Duration: 2 * time.Second},
			},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(fetch(conv)).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, clientKey(conv), &parleyv1alpha1.Conversation{}))
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElement(parleyv1alpha1.EventDeleted))
	})

	It("does not poll an idle Conversation: it is reconciled only when something changes", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			Lifetime: parleyv1alpha1.LifetimeSpec{TTL: &metav1.Duration{Duration: time.Hour}},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		settled := settledReconciles(conv)
		Consistently(func() int64 { return reconcileCount(conv) }).WithTimeout(4 * time.Second).Should(Equal(settled))
	})

	It("acts on a change in one reconcile: the status it writes wakes no second one", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			Lifetime: parleyv1alpha1.LifetimeSpec{TTL: &metav1.Duration{Duration: time.Hour}},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		settled := settledReconciles(conv)
		expiresAt := conv.Status.ExpiresAt

		By("a new ttl: one reconcile moves status.expiresAt")
		setTTL(conv, 2*time.Hour)
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.ExpiresAt.Equal(expiresAt)).To(BeFalse())
		}).Should(Succeed())
		Consistently(func() int64 { return reconcileCount(conv) }).WithTimeout(3*time.Second).Should(Equal(settled+1),
			"the reconcile of the spec change wrote status; the watch event of that write must not wake another")
	})

	It("refuses a status write from a stale copy (optimistic lock), so a second session id is never minted", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		stale := conv.DeepCopy()

		By("another writer changing the object after our read")
		setTTL(conv, 5*time.Hour)

		forged := stale.DeepCopy()
		forged.Status.SessionID = "00000000-0000-4000-8000-000000000000"
		err := controller.WriteStatus(ctx, k8sClient, stale, forged,
			func(c *parleyv1alpha1.Conversation) any { return c.Status })
		Expect(err).To(MatchError(controller.ErrStatusConflict))
		Expect(k8sClient.Get(ctx, clientKey(conv), conv)).To(Succeed())
		Expect(conv.Status.SessionID).To(Equal(stale.Status.SessionID))
	})

	It("keeps status out of reach of spec writers (status subresource)", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.SessionID).NotTo(BeEmpty())
		}).Should(Succeed())
		minted := conv.Status.SessionID
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			Expect(k8sClient.Get(ctx, clientKey(conv), conv)).To(Succeed())
			conv.Status.SessionID = "forged"
			conv.Spec.Lifetime.TTL = &metav1.Duration{Duration: time.Hour}
			return k8sClient.Update(ctx, conv)
		})).To(Succeed())
		Expect(k8sClient.Get(ctx, clientKey(conv), conv)).To(Succeed())
		Expect(conv.Status.SessionID).To(Equal(minted))
	})
})

var _ = Describe("Checkpoint controller on a real apiserver", func() {
	It("waits for its Conversation, then writes its snapshot", func() {
		name := "later-" + uuid.NewString()[:8]
		ckpt := &parleyv1alpha1.Checkpoint{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "ckpt-", Namespace: "default"},
			Spec:       parleyv1alpha1.CheckpointSpec{ConversationRef: parleyv1alpha1.ConversationReference{Name: name}},
		}
		Expect(k8sClient.Create(ctx, ckpt)).To(Succeed())
		Eventually(func(g Gomega) {
			fetch(ckpt)(g)
			cond := meta.FindStatusCondition(ckpt.Status.Conditions, parleyv1alpha1.ConditionReady)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(parleyv1alpha1.ReasonConversationNotFound))
			g.Expect(ckpt.Status.Phase).To(Equal(parleyv1alpha1.CheckpointPending))
		}).Should(Succeed())

		conv := newConversation(parleyv1alpha1.ConversationSpec{})
		conv.GenerateName, conv.Name = "", name
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			fetch(ckpt)(g)
			g.Expect(conv.Status.SessionID).NotTo(BeEmpty())
			g.Expect(ckpt.Status.SessionID).To(Equal(conv.Status.SessionID))
			g.Expect(ckpt.Status.Phase).To(Equal(parleyv1alpha1.CheckpointReady))
			cond := meta.FindStatusCondition(ckpt.Status.Conditions, parleyv1alpha1.ConditionReady)
			g.Expect(cond.Reason).To(Equal(parleyv1alpha1.ReasonSnapshotWritten))
		}).Should(Succeed())
	})
})

// settledReconciles waits until conv is no longer reconciled (a second passes without one)
// and returns how many reconciles it took to get there.
func settledReconciles(conv *parleyv1alpha1.Conversation) int64 {
	var settled int64
	Eventually(func() int64 {
		prev := settled
		settled = reconcileCount(conv)
		return settled - prev
	}).WithPolling(time.Second).Should(BeZero())
	return settled
}

// setTTL changes spec.lifetime.ttl as another writer would, retrying on conflicts.
func setTTL(conv *parleyv1alpha1.Conversation, ttl time.Duration) {
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := &parleyv1alpha1.Conversation{}
		Expect(k8sClient.Get(ctx, clientKey(conv), fresh)).To(Succeed())
		fresh.Spec.Lifetime.TTL = &metav1.Duration{Duration: ttl}
		return k8sClient.Update(ctx, fresh)
	})).To(Succeed())
}
