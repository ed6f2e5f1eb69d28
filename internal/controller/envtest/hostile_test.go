package envtest

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/historytest"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/operatorenv"
)

var _ = Describe("A hostile history", func() {
	It("fails its own Conversation with HistoryCorrupt, is not retried in a loop, and the others keep appending", func() {
		ns := env.AgentNamespace()
		Expect(k8sClient.Create(ctx, s3Secret(ns, "s3"))).To(Succeed())
		a, b := objectStoreConversation(ns, "conv-a"), objectStoreConversation(ns, "conv-b")
		apiA := agentClient(a)
		apiB := agentClient(b)

		By("A's history grows past a seal, written by another process (nothing of it in the suite's caches)")
		writer, err := s3.New(s3.Config{
			Endpoint: "http://" + s3srv.Endpoint, Bucket: testBucket, Prefix: a.Spec.History.ObjectStore.Prefix,
			Addressing: s3.AddressingPath, AccessKeyID: s3srv.AccessKey, SecretAccessKey: s3srv.SecretKey,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(writer.Close)
		key, err := historystore.Key(a)
		Expect(err).NotTo(HaveOccurred())
		h, err := writer.Open(ctx, key, history.OpenOptions{})
		Expect(err).NotTo(HaveOccurred())
		for i := range 72 { // past twice the 32 pieces of an unsealed tail: sealed
			m := operatorenv.TextMessage(fmt.Sprintf("m-%d", i), "user", "hello")
			rec, err := journal.MessageRecord(&m)
			Expect(err).NotTo(HaveOccurred())
			_, err = h.Append(ctx, []history.Record{rec})
			Expect(err).NotTo(HaveOccurred())
		}

		By("someone with write access to the bucket replaces its segments with a 900 MiB decompression bomb of about 1 MB")
		n, err := historytest.ReplaceSealed(ctx, writer, key, historytest.HideSize(historytest.GzipBomb(historytest.BombBytes)))
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeNumerically(">", 0))

		By("the next reconcile of A reads the bomb: HistoryAvailable=False, HistoryCorrupt")
		Expect(k8sClient.Get(ctx, clientKey(a), a)).To(Succeed())
		a.Spec.Lifetime.TTL = &metav1.Duration{Duration: 48 * time.Hour}
		Expect(k8sClient.Update(ctx, a)).To(Succeed())
		Eventually(historyUnavailable(a, parleyv1alpha1.ReasonHistoryCorrupt)).WithTimeout(60 * time.Second).Should(Succeed())
		Expect(meta.IsStatusConditionTrue(a.Status.Conditions, parleyv1alpha1.ConditionReady)).To(BeFalse())

		By("A's agent gets 500 history-corrupt, which the client does not retry")
		_, err = apiA.Append(ctx, ns, a.Name, []conversation.Message{operatorenv.TextMessage("after", "user", "still there?")})
		var p *wire.Problem
		Expect(errors.As(err, &p)).To(BeTrue(), "%v", err)
		Expect(p.Status).To(Equal(500))
		Expect(p.Type).To(Equal(wire.ProblemHistoryCorrupt))

		By("A is looked at again later, not with the workqueue's backoff")
		before := reconcileCount(a)
		Consistently(func() int64 { return reconcileCount(a) }).WithTimeout(3 * time.Second).Should(BeNumerically("<=", before+2))

		By("B, on the same store and manager, keeps appending and its status follows")
		resp, err := apiB.Append(ctx, ns, b.Name, []conversation.Message{operatorenv.TextMessage("u1", "user", "hello"), operatorenv.TextMessage("a1", "assistant", "hi")})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Sequences).To(HaveLen(2))
		Eventually(func(g Gomega) {
			fetch(b)(g)
			g.Expect(meta.IsStatusConditionTrue(b.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)).To(BeTrue())
			g.Expect(b.Status.History).NotTo(BeNil())
			g.Expect(b.Status.History.Messages).To(BeNumerically(">=", 2))
		}).Should(Succeed())
	})
})

// objectStoreConversation creates a Conversation of ns whose history is on the suite's S3
// server under a prefix of its own (credentials Secret "s3"), and waits for its history.
func objectStoreConversation(ns, name string) *parleyv1alpha1.Conversation {
	conv := newConversation(parleyv1alpha1.ConversationSpec{
		History:      objectStoreHistory("hostile-"+randSuffix(), "s3"),
		SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "agent " + name},
	})
	conv.Namespace, conv.GenerateName, conv.Name = ns, "", name
	Expect(k8sClient.Create(ctx, conv)).To(Succeed())
	Eventually(historyReady(conv)).WithTimeout(60 * time.Second).Should(Succeed())
	return conv
}

// agentClient is a Session API client with the token of conv's agent pod, which retries nothing.
func agentClient(conv *parleyv1alpha1.Conversation) *parleyclient.Client {
	pod := env.AgentPodOf(conv)
	api, err := parleyclient.New(parleyclient.Options{URL: env.SessionURL, Token: env.AgentToken(conv.Namespace, "agent", pod), Retries: -1})
	Expect(err).NotTo(HaveOccurred())
	return api
}
