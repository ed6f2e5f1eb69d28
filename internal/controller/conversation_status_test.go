package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// Pure decisions, with time as a parameter: no apiserver needed.
var _ = Describe("decideConversation", func() {
	created := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	fixedID := func() string { return "11111111-2222-4333-8444-555555555555" }
	conv := func(lifetime parleyv1alpha1.LifetimeSpec) *parleyv1alpha1.Conversation {
		return &parleyv1alpha1.Conversation{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 3, CreationTimestamp: metav1.NewTime(created)},
			Spec: parleyv1alpha1.ConversationSpec{
				History:  parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}},
				Lifetime: lifetime,
			},
		}
	}
	hour := &metav1.Duration{Duration: time.Hour}

	It("mints a session, sets expiresAt and requeues exactly at it", func() {
		c := conv(parleyv1alpha1.LifetimeSpec{TTL: hour})
		before := c.DeepCopy()
		d := decideConversation(c, created.Add(10*time.Minute), fixedID)
		Expect(c).To(Equal(before), "the input object must not be mutated")
		Expect(d.minted).To(BeTrue())
		Expect(d.status.SessionID).To(Equal(fixedID()))
		Expect(d.status.ExpiresAt.Time).To(Equal(created.Add(time.Hour)))
		Expect(d.requeueAfter).To(Equal(50 * time.Minute))
		Expect(d.status.Phase).To(Equal(parleyv1alpha1.ConversationActive))
		Expect(d.status.ObservedGeneration).To(Equal(int64(3)))
		for _, cond := range d.status.Conditions {
			Expect(cond.ObservedGeneration).To(Equal(int64(3)), cond.Type)
		}
	})

	It("prefers the pinned session id and never replaces one already in status", func() {
		c := conv(parleyv1alpha1.LifetimeSpec{})
		c.Spec.SessionID = "6f1c2b8e-3d4a-4e5f-9a7b-1c2d3e4f5a6b"
		Expect(decideConversation(c, created, fixedID).status.SessionID).To(Equal(c.Spec.SessionID))

		c.Status.SessionID = "already-there"
		d := decideConversation(c, created, fixedID)
		Expect(d.minted).To(BeFalse())
		Expect(d.status.SessionID).To(Equal("already-there"))
	})

	It("expires at the instant, once, and stays expired when the ttl is raised later", func() {
		c := conv(parleyv1alpha1.LifetimeSpec{TTL: hour})
		d := decideConversation(c, created.Add(time.Hour), fixedID)
		Expect(d.expiredNow).To(BeTrue())
		Expect(d.status.Phase).To(Equal(parleyv1alpha1.ConversationExpired))
		Expect(d.requeueAfter).To(BeZero(), "nothing more is due without deleteAfter")

		c.Status = d.status
		c.Spec.Lifetime.TTL = &metav1.Duration{Duration: 48 * time.Hour}
		again := decideConversation(c, created.Add(2*time.Hour), fixedID)
		Expect(again.expiredNow).To(BeFalse(), "the Expired event is announced once")
		Expect(again.status.Phase).To(Equal(parleyv1alpha1.ConversationExpired))
		Expect(again.status.ExpiresAt.Time).To(Equal(created.Add(time.Hour)))
	})

	It("expires on idleness counted from the last activity", func() {
		c := conv(parleyv1alpha1.LifetimeSpec{TTL: &metav1.Duration{Duration: 24 * time.Hour}, IdleTimeout: hour})
		c.Status.LastActivityTime = ptr.To(metav1.NewTime(created.Add(3 * time.Hour)))
		Expect(decideConversation(c, created.Add(3*time.Hour+59*time.Minute), fixedID).expiredNow).To(BeFalse())
		d := decideConversation(c, created.Add(4*time.Hour), fixedID)
		Expect(d.expiredNow).To(BeTrue())
		cond := meta.FindStatusCondition(d.status.Conditions, parleyv1alpha1.ConditionExpired)
		Expect(cond.Reason).To(Equal(parleyv1alpha1.ReasonIdleTimeout))
		Expect(cond.Message).To(ContainSubstring("no activity for 1h0m0s"))
	})

	It("schedules deletion after deleteAfter and deletes when it is due", func() {
		c := conv(parleyv1alpha1.LifetimeSpec{TTL: hour, DeleteAfter: &metav1.Duration{Duration: 30 * time.Minute}})
		d := decideConversation(c, created.Add(time.Hour+10*time.Minute), fixedID)
		Expect(d.deleteNow).To(BeFalse())
		Expect(d.requeueAfter).To(Equal(20 * time.Minute))
		c.Status = d.status
		Expect(decideConversation(c, created.Add(90*time.Minute), fixedID).deleteNow).To(BeTrue())
	})

	It("reports Suspended while suspended and not expired", func() {
		c := conv(parleyv1alpha1.LifetimeSpec{TTL: hour})
		c.Spec.Suspend = ptr.To(true)
		Expect(decideConversation(c, created, fixedID).status.Phase).To(Equal(parleyv1alpha1.ConversationSuspended))
	})

	It("is idempotent: deciding again from its own output changes nothing", func() {
		c := conv(parleyv1alpha1.LifetimeSpec{TTL: hour})
		now := created.Add(5 * time.Minute)
		c.Status = decideConversation(c, now, fixedID).status
		Expect(decideConversation(c, now, fixedID).status).To(Equal(c.Status))
	})

	It("reports a sessionID pinned after the session started instead of ignoring it silently", func() {
		c := conv(parleyv1alpha1.LifetimeSpec{})
		c.Status.SessionID = fixedID()
		c.Spec.SessionID = "6f1c2b8e-3d4a-4e5f-9a7b-1c2d3e4f5a6b"
		d := decideConversation(c, created, fixedID)
		Expect(d.status.SessionID).To(Equal(fixedID()))
		cond := meta.FindStatusCondition(d.status.Conditions, parleyv1alpha1.ConditionDegraded)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		Expect(cond.Reason).To(Equal(parleyv1alpha1.ReasonSessionIDMismatch))

		By("clearing the condition once the spec agrees with the session")
		c.Status = d.status
		c.Spec.SessionID = fixedID()
		Expect(meta.FindStatusCondition(decideConversation(c, created, fixedID).status.Conditions,
			parleyv1alpha1.ConditionDegraded)).To(BeNil())
	})

	It("says which features are not implemented yet instead of pretending", func() {
		c := conv(parleyv1alpha1.LifetimeSpec{})
		c.Spec.Agent = &parleyv1alpha1.AgentSpec{}
		d := decideConversation(c, created, fixedID)
		for _, t := range []string{parleyv1alpha1.ConditionHistoryAvailable, parleyv1alpha1.ConditionAgentRunning} {
			cond := meta.FindStatusCondition(d.status.Conditions, t)
			Expect(cond).NotTo(BeNil(), t)
			Expect(cond.Status).To(Equal(metav1.ConditionUnknown), t)
			Expect(cond.Reason).To(Equal(parleyv1alpha1.ReasonNotImplemented), t)
		}
	})
})
