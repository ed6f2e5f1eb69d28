package envtest

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history"
)

var _ = Describe("Checkpoints of one conversation handled by several workers at once", func() {
	It("each stores its own snapshot, and deleting some removes theirs only", func() {
		ns := env.AgentNamespace()
		Expect(k8sClient.Create(ctx, s3Secret(ns, "s3"))).To(Succeed())
		conv := newConversation(parleyv1alpha1.ConversationSpec{History: objectStoreHistory("parallel-"+randSuffix(), "s3")})
		conv.Namespace = ns
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())

		const n = 8 // twice the suite's Checkpoint workers
		ckpts := make([]*parleyv1alpha1.Checkpoint, 0, n)
		for range n {
			c := manualCheckpoint(conv)
			Expect(k8sClient.Create(ctx, c)).To(Succeed())
			ckpts = append(ckpts, c)
		}
		// The suite's namespaces have one history slot (HistoryIOPerNamespace of four workers),
		// which the Conversation shares: the snapshots put off retry every few seconds, so the
		// last may come long after the first.
		digests := map[string]bool{}
		for _, c := range ckpts {
			Eventually(checkpointReady(c)).WithTimeout(2 * time.Minute).Should(Succeed())
			digests[c.Status.Digest] = true
		}
		Expect(digests).To(HaveLen(n), "one snapshot per Checkpoint")

		By("half of them are deleted at once")
		gone, kept := ckpts[:n/2], ckpts[n/2:]
		for _, c := range gone {
			Expect(k8sClient.Delete(ctx, c)).To(Succeed())
		}
		for _, c := range gone {
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, clientKey(c), &parleyv1alpha1.Checkpoint{}))
			}).Should(BeTrue(), "the finalizer of %s is released", c.Name)
		}
		h, err := stores.Open(ctx, conv, false)
		Expect(err).NotTo(HaveOccurred())
		for _, c := range gone {
			_, err := h.GetCheckpoint(ctx, history.Digest(c.Status.Digest))
			Expect(err).To(MatchError(history.ErrNotFound), "the snapshot of deleted %s", c.Name)
		}
		for _, c := range kept {
			_, err := h.GetCheckpoint(ctx, history.Digest(c.Status.Digest))
			Expect(err).NotTo(HaveOccurred(), "the snapshot of kept %s", c.Name)
		}
	})
})
