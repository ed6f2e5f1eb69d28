//go:build e2e

package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// checkpointCount is the ResourceQuota resource docs/security.md has operators cap.
const checkpointCount corev1.ResourceName = "count/checkpoints.parley.dev"

// checkpointQuotaSpecs are the manager's own Checkpoints under a ResourceQuota that
// kube-controller-manager's quota controller keeps counting (envtest has none: there the specs
// write the quota's usage themselves). They run in the manager's Ordered container; label
// checkpoint-quota.
func checkpointQuotaSpecs(dynamicClient func() dynamic.Interface) {
	It("holds an Archive expiry at a full Checkpoint quota, says why, and archives once the quota controller counts a deletion", Label("checkpoint-quota"), func(ctx SpecContext) {
		ns := newNamespace(ctx)
		convs := dynamicClient().Resource(conversations).Namespace(ns)
		ckpts := dynamicClient().Resource(checkpoints).Namespace(ns)

		By("a ResourceQuota of two Checkpoints, once its controller has counted them")
		_, err := clientset.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "parley-checkpoints"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{checkpointCount: resource.MustParse("2")}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			q, err := clientset.CoreV1().ResourceQuotas(ns).Get(ctx, "parley-checkpoints", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(q.Status.Used).To(HaveKey(checkpointCount))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())

		By("a Conversation that archives on expiry, and two Manual Checkpoints that fill the quota")
		const ttl = 30 * time.Second
		_, err = convs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "parley.dev/v1alpha1", "kind": "Conversation",
			"metadata": map[string]any{"name": "archived"},
			"spec": map[string]any{
				"history":      map[string]any{"configMap": map[string]any{}},
				"systemPrompt": map[string]any{"text": "be brief"},
				"lifetime":     map[string]any{"ttl": ttl.String(), "expirationPolicy": "Archive"},
			},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			u, err := convs.Get(ctx, "archived", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(conditionReason(u, "HistoryAvailable")).To(Equal("HistoryReady"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
		for _, name := range []string{"by-hand-1", "by-hand-2"} {
			_, err := ckpts.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "parley.dev/v1alpha1", "kind": "Checkpoint",
				"metadata": map[string]any{"name": name},
				"spec":     map[string]any{"conversationRef": map[string]any{"name": "archived"}, "reason": "Manual"},
			}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}

		By("the expiry: the final Checkpoint is refused, the live history kept, Degraded and an event say why")
		Eventually(func(g Gomega) {
			u, err := convs.Get(ctx, "archived", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(conditionReason(u, "Degraded")).To(Equal("CheckpointRefused"))
			g.Expect(conditionOf(u, "Expired")["message"]).To(ContainSubstring("the live history is kept until the final Checkpoint archived-archive is admitted"))
			g.Expect(conditionOf(u, "Expired")["message"]).To(ContainSubstring("exceeded quota: parley-checkpoints"))
			g.Expect(conditionOf(u, "HistoryAvailable")["status"]).To(Equal("True"), "the store is fine")
		}).WithContext(ctx).WithTimeout(ttl + time.Minute).WithPolling(poll).Should(Succeed())
		Eventually(func(g Gomega) {
			evs, err := clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			var refused int
			for _, ev := range evs.Items {
				if ev.Regarding.Name == "archived" && ev.Reason == "CheckpointRefused" {
					refused++
				}
			}
			g.Expect(refused).To(Equal(1))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())

		By("a Manual Checkpoint deleted: the quota controller counts it, the manager archives on its next try")
		Expect(ckpts.Delete(ctx, "by-hand-1", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega) {
			u, err := convs.Get(ctx, "archived", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(conditionReason(u, "HistoryAvailable")).To(Equal("HistoryArchived"))
			g.Expect(conditionOf(u, "Degraded")).To(BeNil())
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(poll).Should(Succeed())
	})
}

// conditionOf is the condition of type typ in u's status (nil without one).
func conditionOf(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

func conditionReason(u *unstructured.Unstructured, typ string) string {
	r, _ := conditionOf(u, typ)["reason"].(string)
	return r
}
