package envtest

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/operatorenv"
)

// resetFixture is a live conversation with three turns, the last waiting for its tool result.
func resetFixture(ns string) (*parleyv1alpha1.Conversation, *parleyclient.Client) {
	conv := env.LiveConversation(ns, "conv")
	agent, err := parleyclient.New(parleyclient.Options{URL: sessionURL, Token: env.AgentToken(ns, "agent", env.AgentPodOf(conv))})
	Expect(err).NotTo(HaveOccurred())
	_, err = agent.Append(ctx, ns, "conv", []conversation.Message{
		operatorenv.TextMessage("u1", "user", "one"), operatorenv.TextMessage("a1", "assistant", "one"),
		operatorenv.TextMessage("u2", "user", "two"), operatorenv.TextMessage("a2", "assistant", "two"),
		operatorenv.TextMessage("u3", "user", "three"),
		{ID: "a3", Role: conversation.RoleAssistant, Blocks: []conversation.Block{{Type: conversation.BlockToolUse, ToolUseID: "t1", ToolName: "search", Input: []byte(`{}`)}}},
	})
	Expect(err).NotTo(HaveOccurred())
	return conv, agent
}

// snapshotOf reads a Ready Checkpoint's snapshot back from the conversation's history.
func snapshotOf(conv *parleyv1alpha1.Conversation, ckpt *parleyv1alpha1.Checkpoint) conversation.Snapshot {
	env.Fetch(conv)(Default)
	h, err := env.Stores.Open(ctx, conv, false)
	Expect(err).NotTo(HaveOccurred())
	raw, err := h.GetCheckpoint(ctx, history.Digest(ckpt.Status.Digest))
	Expect(err).NotTo(HaveOccurred())
	snap, err := conversation.UnmarshalSnapshot(raw)
	Expect(err).NotTo(HaveOccurred())
	return snap
}

func messageIDs(ms []conversation.Message) []string {
	out := make([]string, 0, len(ms))
	for i := range ms {
		out = append(out, ms[i].ID)
	}
	return out
}

var _ = Describe("Session API reset", func() {
	It("clears the history after a Reset Checkpoint holds all of it, a turn waiting for its tool included", func() {
		ns := env.AgentNamespace()
		conv, agent := resetFixture(ns)
		editor, err := parleyclient.New(parleyclient.Options{URL: sessionURL, Token: env.EditorToken(ns)})
		Expect(err).NotTo(HaveOccurred())

		res, err := editor.Reset(ctx, ns, "conv", wire.ResetRequest{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Epoch).To(Equal(uint64(2)))
		Expect(res.Cleared).To(Equal(6))
		Expect(res.Kept).To(BeZero())

		By("the Reset Checkpoint is Ready, says who asked, and its snapshot holds the old messages and the system prompt")
		ckpt := &parleyv1alpha1.Checkpoint{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: res.Checkpoint}, ckpt)).To(Succeed())
		Expect(ckpt.Spec.Reason).To(Equal(parleyv1alpha1.CheckpointReset))
		Expect(ckpt.Status.Phase).To(Equal(parleyv1alpha1.CheckpointReady))
		Expect(ckpt.Status.Messages).To(Equal(int64(6)))
		Expect(ckpt.Annotations).To(HaveKeyWithValue(parleyv1alpha1.AnnotationResetRequestedBy, "system:serviceaccount:"+ns+":editor"))
		Expect(ckpt.Annotations).To(HaveKey(parleyv1alpha1.AnnotationResetResult))
		snap := snapshotOf(conv, ckpt)
		Expect(messageIDs(snap.State.Messages)).To(Equal([]string{"u1", "a1", "u2", "a2", "u3", "a3"}))
		Expect(snap.State.System).NotTo(BeNil())

		By("the new epoch holds nothing, not even the system prompt")
		st, err := editor.State(ctx, ns, "conv")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Epoch).To(Equal(uint64(2)))
		Expect(st.State.Messages).To(BeEmpty())
		Expect(st.State.System).To(BeNil())

		By("status reports the new epoch and its counts, and an event says what happened")
		Eventually(func(g Gomega) {
			env.Fetch(conv)(g)
			g.Expect(conv.Status.History).NotTo(BeNil())
			g.Expect(conv.Status.History.Epoch).To(Equal(int64(2)))
			g.Expect(conv.Status.History.Messages).To(BeZero())
			g.Expect(conv.Status.History.Turns).To(BeZero())
		}).Should(Succeed())
		Eventually(func() []string { return env.EventReasons(conv) }).Should(ContainElement(parleyv1alpha1.EventHistoryReset))

		By("the agent continues in the new epoch")
		out, err := agent.Append(ctx, ns, "conv", []conversation.Message{operatorenv.TextMessage("n1", "user", "again")})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Epoch).To(Equal(uint64(2)))
	})

	It("keeps the system prompt when asked, answers a retry with the same id without clearing again, and a new id resets again", func() {
		ns := env.AgentNamespace()
		conv, agent := resetFixture(ns)
		editor, err := parleyclient.New(parleyclient.Options{URL: sessionURL, Token: env.EditorToken(ns)})
		Expect(err).NotTo(HaveOccurred())

		first, err := editor.Reset(ctx, ns, "conv", wire.ResetRequest{ID: "reset-1", KeepSystem: true})
		Expect(err).NotTo(HaveOccurred())
		st, err := editor.State(ctx, ns, "conv")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.State.Messages).To(BeEmpty())
		Expect(st.State.System).NotTo(BeNil())
		Expect(st.State.System.Text()).To(Equal("agent conv"))

		By("a message after the reset, then the same reset again: the same answer, nothing cleared")
		_, err = agent.Append(ctx, ns, "conv", []conversation.Message{operatorenv.TextMessage("n1", "user", "after the reset")})
		Expect(err).NotTo(HaveOccurred())
		again, err := editor.Reset(ctx, ns, "conv", wire.ResetRequest{ID: "reset-1", KeepSystem: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(first))
		page, err := editor.Messages(ctx, ns, "conv", 0, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Epoch).To(Equal(first.Epoch))
		Expect(messageIDs(page.Messages)).To(Equal([]string{"n1"}))

		By("the same id sent as Idempotency-Key, the way a plain HTTP client retries: the same answer")
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, sessionURL+wire.ConversationPath(ns, "conv")+"/reset", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+editorTokenAgain(ns))
		req.Header.Set(wire.IdempotencyKeyHeader, "reset-1")
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(http.StatusOK))

		By("a reset with another id clears again, after its own Checkpoint holds n1")
		second, err := editor.Reset(ctx, ns, "conv", wire.ResetRequest{ID: "reset-2"})
		Expect(err).NotTo(HaveOccurred())
		Expect(second.Epoch).To(Equal(first.Epoch + 1))
		Expect(second.Checkpoint).NotTo(Equal(first.Checkpoint))
		Expect(second.Cleared).To(Equal(1))
		ckpt := &parleyv1alpha1.Checkpoint{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: second.Checkpoint}, ckpt)).To(Succeed())
		Expect(messageIDs(snapshotOf(conv, ckpt).State.Messages)).To(Equal([]string{"n1"}))
		resets := &parleyv1alpha1.CheckpointList{}
		Expect(k8sClient.List(ctx, resets, client.InNamespace(ns))).To(Succeed())
		n := 0
		for _, c := range resets.Items {
			if c.Spec.Reason == parleyv1alpha1.CheckpointReset {
				n++
			}
		}
		Expect(n).To(Equal(2), "one Reset Checkpoint per reset id, retries included")
	})

	It("refuses a caller without delete on conversations/history with 403 and changes nothing", func() {
		ns := env.AgentNamespace()
		conv, agent := resetFixture(ns)
		_, err := agent.Reset(ctx, ns, "conv", wire.ResetRequest{KeepSystem: true})
		Expect(problemStatus(err)).To(Equal(403), "%v", err)
		status, p, _ := rawCall(http.MethodPost, wire.ConversationPath(ns, "conv")+"/reset", env.AgentToken(ns, "agent", nil), []byte(`{"keepSystem":true}`))
		Expect(status).To(Equal(403))
		Expect(p.Type).To(Equal(wire.ProblemForbidden))
		Expect(p.Detail).To(ContainSubstring("may not delete conversations/history"))

		sum, err := agent.Conversation(ctx, ns, "conv")
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.Epoch).To(Equal(uint64(1)))
		Expect(sum.Messages).To(Equal(6))
		list := &parleyv1alpha1.CheckpointList{}
		Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(BeEmpty())
		_ = conv
	})

	It("answers a reset at a full Checkpoint quota at once with 409, naming the quota, and clears nothing", func() {
		ns := env.AgentNamespace()
		env.CheckpointQuota(ns, 0)
		_, agent := resetFixture(ns)
		token := env.EditorToken(ns)

		start := time.Now()
		status, p, hdr := rawCall(http.MethodPost, wire.ConversationPath(ns, "conv")+"/reset", token, []byte(`{"id":"full"}`))
		Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second), "the reset waited for a Checkpoint that was refused")
		Expect(status).To(Equal(409))
		Expect(p.Type).To(Equal(wire.ProblemConflict))
		Expect(p.Detail).To(ContainSubstring("exceeded quota: parley-checkpoints"))
		Expect(p.Detail).To(ContainSubstring("nothing was cleared"))
		Expect(hdr.Get("Retry-After")).To(BeEmpty(), "waiting frees no room")

		By("a Manual Checkpoint through the Session API, by a caller who may create Checkpoints: the same answer")
		env.GrantCheckpointCreate(ns, "editor", "checkpoint-editor")
		status, p, _ = rawCall(http.MethodPost, wire.ConversationPath(ns, "conv")+"/checkpoints", token, []byte(`{"name":"by-hand"}`))
		Expect(status).To(Equal(409))
		Expect(p.Detail).To(ContainSubstring("exceeded quota: parley-checkpoints"))

		sum, err := agent.Conversation(ctx, ns, "conv")
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.Epoch).To(Equal(uint64(1)))
		Expect(sum.Messages).To(Equal(6))
	})
})

// editorTokenAgain mints another token of the editor ServiceAccount editorToken set up.
func editorTokenAgain(ns string) string { return env.AgentToken(ns, "editor", nil) }
