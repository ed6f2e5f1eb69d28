package clients

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/operatorenv"
)

// problem is err's problem+json answer, or fails the spec.
func problem(err error) *wire.Problem {
	GinkgoHelper()
	var p *wire.Problem
	Expect(errors.As(err, &p)).To(BeTrue(), "not a problem answer: %v", err)
	return p
}

// The same checks as the Python client's (clients/session-api-python/check_client.py), with
// the Go client set up as in an agent pod: the token read from a file.
var _ = Describe("Go client (pkg/client)", func() {
	It("appends, retries with the same ids, reads, pages, meets a conflict, follows and resets", func() {
		ns := env.AgentNamespace()
		conv := env.LiveConversation(ns, "conv")
		tokenFile := filepath.Join(GinkgoT().TempDir(), "token")
		Expect(os.WriteFile(tokenFile, []byte(env.AgentToken(ns, "agent", env.AgentPodOf(conv))), 0o600)).To(Succeed())
		api, err := parleyclient.New(parleyclient.Options{URL: env.SessionURL, TokenFile: tokenFile})
		Expect(err).NotTo(HaveOccurred())
		ctx := env.Ctx

		batch := []conversation.Message{operatorenv.TextMessage("go-u1", "user", "from go"), operatorenv.TextMessage("go-a1", "assistant", "hello go")}
		first, err := api.Append(ctx, ns, conv.Name, batch)
		Expect(err).NotTo(HaveOccurred())
		again, err := api.Append(ctx, ns, conv.Name, batch)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Sequences).To(Equal(first.Sequences), "a retry with the same ids stores nothing twice")

		sum, err := api.Conversation(ctx, ns, conv.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.Messages).To(Equal(2))

		page, err := api.Messages(ctx, ns, conv.Name, 0, 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Messages).To(HaveLen(1))
		Expect(page.Messages[0].ID).To(Equal("go-u1"))
		Expect(page.Next).To(Equal(first.Sequences[0]))

		_, err = api.Append(ctx, ns, conv.Name, []conversation.Message{operatorenv.TextMessage("go-u1", "user", "changed")})
		p := problem(err)
		Expect(p.Status).To(Equal(409))
		Expect(p.Type).To(Equal(wire.ProblemConflict))

		followCtx, stop := context.WithCancel(ctx)
		defer stop()
		got := make(chan string, 4)
		go func() {
			defer GinkgoRecover()
			_ = api.Follow(followCtx, ns, conv.Name, first.Sequences[len(first.Sequences)-1], func(m conversation.Message) error {
				got <- m.ID
				return nil
			})
		}()
		_, err = api.Append(ctx, ns, conv.Name, []conversation.Message{operatorenv.TextMessage("go-u2", "user", "more"), operatorenv.TextMessage("go-a2", "assistant", "sure")})
		Expect(err).NotTo(HaveOccurred())
		Eventually(got).Should(Receive(Equal("go-u2")))
		Eventually(got).Should(Receive(Equal("go-a2")))
		stop()

		By("reset: 403 without delete on conversations/history, idempotent by id")
		_, err = api.Reset(ctx, ns, conv.Name, wire.ResetRequest{KeepSystem: true})
		p = problem(err)
		Expect(p.Status).To(Equal(403))
		Expect(p.Type).To(Equal(wire.ProblemForbidden))
		editor, err := parleyclient.New(parleyclient.Options{URL: env.SessionURL, Token: env.EditorToken(ns)})
		Expect(err).NotTo(HaveOccurred())
		done, err := editor.Reset(ctx, ns, conv.Name, wire.ResetRequest{ID: "go-reset-1", KeepSystem: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(done.Cleared).To(Equal(4))
		Expect(done.Checkpoint).NotTo(BeEmpty())
		repeated, err := editor.Reset(ctx, ns, conv.Name, wire.ResetRequest{ID: "go-reset-1", KeepSystem: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(repeated).To(Equal(done))
		sum, err = editor.Conversation(ctx, ns, conv.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.Messages).To(BeZero())
		Expect(sum.Epoch).To(Equal(done.Epoch))
	})
})
