package envtest

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/test/support/operatorenv"
)

// The leader summarises its own Session API's appends from the shared view without reading the
// store (they were folded into it). Appends another replica made must still reach status: that
// replica marks the conversation active with a status patch, and the reconcile it wakes reads
// the store, as does one whose own appends met a gap in the view. (When that patch and this
// replica's hand-over wake one reconcile together, the patch changed the object, and
// TestViewHeadToTrust checks that the view is then not trusted.)
var _ = Describe("Status feedback with appends on two replicas", func() {
	It("counts another replica's appends between this replica's own", func() {
		ns := env.AgentNamespace()
		conv := env.LiveConversation(ns, "conv")
		api, err := parleyclient.New(parleyclient.Options{URL: sessionURL, Token: env.AgentToken(ns, "agent", env.AgentPodOf(conv))})
		Expect(err).NotTo(HaveOccurred())
		// The other replica: its own store handles, and activity it patches (it does not lead).
		other := &historystore.Stores{ConfigMaps: k8sClient, Secrets: k8sClient}
		otherActivity := &session.Activity{Client: k8sClient}

		total := 0
		statusShows := func() {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				env.Fetch(conv)(g)
				g.Expect(conv.Status.History).NotTo(BeNil())
				g.Expect(conv.Status.History.Messages).To(Equal(int64(total)))
			}).Should(Succeed())
		}
		for round := range 3 {
			By(fmt.Sprintf("round %d: this replica appends, status follows from the view", round))
			for i := range 4 {
				_, err := api.Append(ctx, ns, "conv", []conversation.Message{operatorenv.TextMessage(fmt.Sprintf("local-%d-%d", round, i), "user", "here")})
				Expect(err).NotTo(HaveOccurred())
				total++
			}
			statusShows()

			By(fmt.Sprintf("round %d: the other replica appends and marks the conversation active", round))
			env.Fetch(conv)(Default)
			seen := conv.DeepCopy()
			h, err := other.Open(ctx, seen, false)
			Expect(err).NotTo(HaveOccurred())
			m := operatorenv.TextMessage(fmt.Sprintf("remote-%d", round), "user", "there")
			rec, err := journal.MessageRecord(&m)
			Expect(err).NotTo(HaveOccurred())
			_, err = h.Append(ctx, []history.Record{rec})
			Expect(err).NotTo(HaveOccurred())
			total++
			if round%2 == 1 {
				// This replica appends again before the other's activity reaches status: its
				// append lands after a gap in its view.
				_, err = api.Append(ctx, ns, "conv", []conversation.Message{operatorenv.TextMessage(fmt.Sprintf("local-%d-after", round), "user", "here")})
				Expect(err).NotTo(HaveOccurred())
				total++
			}
			// Only the other replica's activity patch tells this one of its append.
			otherActivity.Touch(seen)
			otherActivity.Flush(ctx)
			statusShows()
		}
	})
})
