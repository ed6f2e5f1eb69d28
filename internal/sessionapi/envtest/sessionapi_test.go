package envtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/bundle"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/operatorenv"
)

// rawCall sends a request and decodes a problem body when the status is not 2xx.
func rawCall(method, path, token string, body []byte) (int, *wire.Problem, http.Header) {
	req, err := http.NewRequestWithContext(ctx, method, sessionURL+path, bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, nil, resp.Header
	}
	Expect(resp.Header.Get("Content-Type")).To(Equal(wire.ProblemContentType))
	p := &wire.Problem{}
	Expect(json.NewDecoder(resp.Body).Decode(p)).To(Succeed())
	Expect(p.Status).To(Equal(resp.StatusCode))
	Expect(p.Type).To(HavePrefix("https://parley.dev/problems/"))
	Expect(p.Detail).NotTo(BeEmpty())
	return resp.StatusCode, p, resp.Header
}

func problemStatus(err error) int {
	var p *wire.Problem
	if errors.As(err, &p) {
		return p.Status
	}
	return 0
}

var _ = Describe("Session API", func() {
	It("authenticates with TokenReview, authorises with RBAC, and binds agent tokens to their conversation", func() {
		ns := env.AgentNamespace()
		a := env.LiveConversation(ns, "conv-a")
		b := env.LiveConversation(ns, "conv-b")
		podA := env.AgentPodOf(a)
		env.AgentPodOf(b)
		tokenA := env.AgentToken(ns, "agent", podA)

		apiA, err := parleyclient.New(parleyclient.Options{URL: sessionURL, Token: tokenA, Retries: -1})
		Expect(err).NotTo(HaveOccurred())

		By("no token: 401")
		status, p, hdr := rawCall(http.MethodGet, wire.ConversationPath(ns, "conv-a"), "", nil)
		Expect(status).To(Equal(401))
		Expect(p.Type).To(Equal(wire.ProblemUnauthorized))
		Expect(hdr.Get("WWW-Authenticate")).To(ContainSubstring("Bearer"))

		By("a token for another audience: 401")
		other := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{"someone-else"}}}
		Expect(k8sClient.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}}, other)).To(Succeed())
		status, _, _ = rawCall(http.MethodGet, wire.ConversationPath(ns, "conv-a"), other.Status.Token, nil)
		Expect(status).To(Equal(401))

		By("agent A appends to its own conversation")
		resp, err := apiA.Append(ctx, ns, "conv-a", []conversation.Message{operatorenv.TextMessage("u1", "user", "hello"), operatorenv.TextMessage("a1", "assistant", "hi")})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Sequences).To(HaveLen(2))
		Expect(resp.Sequences[1]).To(Equal(resp.Sequences[0] + 1))

		By("agent A is refused conversation B: same namespace, same ServiceAccount")
		_, err = apiA.Append(ctx, ns, "conv-b", []conversation.Message{operatorenv.TextMessage("x", "user", "intrusion")})
		Expect(problemStatus(err)).To(Equal(403), "%v", err)
		_, err = apiA.Messages(ctx, ns, "conv-b", 0, 0)
		Expect(problemStatus(err)).To(Equal(403))
		status, p, _ = rawCall(http.MethodPost, wire.ConversationPath(ns, "conv-b")+"/messages", tokenA,
			[]byte(`{"messages":[{"id":"x","role":"user","blocks":[{"type":"text","text":"intrusion"}]}]}`))
		Expect(status).To(Equal(403))
		Expect(p.Type).To(Equal(wire.ProblemForbidden), "a problem+json body (rawCall checks the media type)")
		Expect(p.Detail).To(ContainSubstring("not the agent pod of conversation " + ns + "/conv-b"))

		By("a ServiceAccount without the role: 403, and a missing conversation is not revealed")
		stranger := env.AgentToken(ns, "stranger", nil)
		status, p, _ = rawCall(http.MethodGet, wire.ConversationPath(ns, "conv-a"), stranger, nil)
		Expect(status).To(Equal(403))
		Expect(p.Type).To(Equal(wire.ProblemForbidden))
		status, _, _ = rawCall(http.MethodGet, wire.ConversationPath(ns, "no-such"), stranger, nil)
		Expect(status).To(Equal(403))

		By("a Role naming one conversation (resourceNames) grants that one only")
		env.GrantHistory(ns, "named", []string{"get"}, "conv-a")
		named := env.AgentToken(ns, "named", nil)
		status, _, _ = rawCall(http.MethodGet, wire.ConversationPath(ns, "conv-a"), named, nil)
		Expect(status).To(Equal(200))
		status, p, _ = rawCall(http.MethodGet, wire.ConversationPath(ns, "conv-b"), named, nil)
		Expect(status).To(Equal(403))
		Expect(p.Type).To(Equal(wire.ProblemForbidden))

		By("an unbound token with the role reads any conversation of the namespace, and gets 404 for a missing one")
		unbound, err := parleyclient.New(parleyclient.Options{URL: sessionURL, Token: env.AgentToken(ns, "agent", nil), Retries: -1})
		Expect(err).NotTo(HaveOccurred())
		sum, err := unbound.Conversation(ctx, ns, "conv-a")
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.SessionID).To(Equal(a.Status.SessionID))
		Expect(sum.Messages).To(Equal(2))
		_, err = unbound.Conversation(ctx, ns, "no-such")
		Expect(problemStatus(err)).To(Equal(404))

		By("nothing of agent A's refused attempts reached conversation B")
		sumB, err := unbound.Conversation(ctx, ns, "conv-b")
		Expect(err).NotTo(HaveOccurred())
		Expect(sumB.SessionID).To(Equal(b.Status.SessionID))
		Expect(sumB.Messages).To(BeZero())
	})

	It("stores a batch sent three times once, refuses other content under a used id, and pages", func() {
		ns := env.AgentNamespace()
		conv := env.LiveConversation(ns, "conv")
		pod := env.AgentPodOf(conv)
		api, err := parleyclient.New(parleyclient.Options{URL: sessionURL, Token: env.AgentToken(ns, "agent", pod)})
		Expect(err).NotTo(HaveOccurred())

		batch := make([]conversation.Message, 0, 20)
		for i := range 10 {
			batch = append(batch, operatorenv.TextMessage(fmt.Sprintf("u%d", i), "user", fmt.Sprintf("question %d", i)),
				operatorenv.TextMessage(fmt.Sprintf("a%d", i), "assistant", fmt.Sprintf("answer %d", i)))
		}
		first, err := api.Append(ctx, ns, "conv", batch)
		Expect(err).NotTo(HaveOccurred())
		for range 2 {
			again, err := api.Append(ctx, ns, "conv", batch)
			Expect(err).NotTo(HaveOccurred())
			Expect(again.Sequences).To(Equal(first.Sequences))
		}
		sum, err := api.Conversation(ctx, ns, "conv")
		Expect(err).NotTo(HaveOccurred())
		Expect(sum.Messages).To(Equal(20))
		Expect(sum.Turns).To(Equal(10))

		By("the same id with other content: 409")
		_, err = api.Append(ctx, ns, "conv", []conversation.Message{operatorenv.TextMessage("u3", "user", "edited question")})
		Expect(problemStatus(err)).To(Equal(409))

		By("paging with after and limit")
		page, err := api.Messages(ctx, ns, "conv", 0, 7)
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Messages).To(HaveLen(7))
		Expect(page.Messages[0].ID).To(Equal("u0"))
		var ids []string
		for after := uint64(0); ; {
			page, err := api.Messages(ctx, ns, "conv", after, 7)
			Expect(err).NotTo(HaveOccurred())
			for _, m := range page.Messages {
				ids = append(ids, m.ID)
			}
			if page.Next == 0 {
				break
			}
			after = page.Next
		}
		Expect(ids).To(HaveLen(20))
		Expect(ids[19]).To(Equal("a9"))

		By("status reports the appends and the activity, in batches")
		Eventually(func(g Gomega) {
			env.Fetch(conv)(g)
			g.Expect(conv.Status.History.Messages).To(Equal(int64(20)))
			g.Expect(conv.Status.LastActivityTime).NotTo(BeNil())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("answers bad requests with problem+json and applies nothing of them", func() {
		ns := env.AgentNamespace()
		conv := env.LiveConversation(ns, "conv")
		token := env.AgentToken(ns, "agent", env.AgentPodOf(conv))
		path := wire.ConversationPath(ns, "conv") + "/messages"

		By("a 5 MiB body: 413")
		big := []byte(`{"messages":[{"id":"m","role":"user","blocks":[{"type":"text","text":"` + strings.Repeat("x", 5<<20) + `"}]}]}`)
		status, p, _ := rawCall(http.MethodPost, path, token, big)
		Expect(status).To(Equal(413))
		Expect(p.Type).To(Equal(wire.ProblemTooLarge))

		By("not JSON: 400")
		status, p, _ = rawCall(http.MethodPost, path, token, []byte(`{"messages": [`))
		Expect(status).To(Equal(400))
		Expect(p.Type).To(Equal(wire.ProblemMalformed))

		By("a batch whose second message is invalid: 422, and the first is not stored")
		body, err := json.Marshal(wire.AppendRequest{Messages: []conversation.Message{
			operatorenv.TextMessage("ok1", "user", "fine"), {ID: "bad", Role: "narrator"},
		}})
		Expect(err).NotTo(HaveOccurred())
		status, p, _ = rawCall(http.MethodPost, path, token, body)
		Expect(status).To(Equal(422))
		Expect(p.Detail).To(ContainSubstring("messages[1]"))
		status, _, _ = rawCall(http.MethodGet, path+"?after=banana", token, nil)
		Expect(status).To(Equal(400))

		api, err := parleyclient.New(parleyclient.Options{URL: sessionURL, Token: token})
		Expect(err).NotTo(HaveOccurred())
		page, err := api.Messages(ctx, ns, "conv", 0, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Messages).To(BeEmpty())
	})

	It("stores events once, reports adapter state, creates checkpoints, streams new messages and requests compaction", func() {
		ns := env.AgentNamespace()
		conv := env.LiveConversation(ns, "conv")
		api, err := parleyclient.New(parleyclient.Options{URL: sessionURL, Token: env.AgentToken(ns, "agent", env.AgentPodOf(conv))})
		Expect(err).NotTo(HaveOccurred())

		By("reducer events: a streamed assistant message, stored once under its ids")
		events := []wire.Event{
			{ID: "e1", Event: conversation.Event{
				Type:    conversation.EventBlockUpsert,
				Message: &conversation.Message{ID: "s1", Role: conversation.RoleAssistant},
				Block:   &conversation.Block{ID: "b1", Type: conversation.BlockText, Text: "Hel"},
			}},
			{ID: "e2", Event: conversation.Event{Type: conversation.EventBlockDelta, MessageID: "s1", BlockID: "b1", Delta: "lo"}},
			{ID: "e3", Event: conversation.Event{Type: conversation.EventSessionIdle}},
		}
		first, err := api.AppendEvents(ctx, ns, "conv", events)
		Expect(err).NotTo(HaveOccurred())
		again, err := api.AppendEvents(ctx, ns, "conv", events)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Sequences).To(Equal(first.Sequences))
		page, err := api.Messages(ctx, ns, "conv", 0, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Messages).To(HaveLen(1))
		Expect(page.Messages[0].Text()).To(Equal("Hello"))
		_, err = api.AppendEvents(ctx, ns, "conv", []wire.Event{{ID: "bad", Event: conversation.Event{Type: "block:explode"}}})
		Expect(problemStatus(err)).To(Equal(422))

		By("adapter state: the latest report reaches status")
		Expect(api.PutAdapterState(ctx, ns, "conv", wire.AdapterStateRequest{
			Type: conversation.AdapterClaudeAgentSDK, State: map[string]any{"sessionId": "sdk-session-1"},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			env.Fetch(conv)(g)
			g.Expect(conv.Status.AdapterState).NotTo(BeNil())
			g.Expect(conv.Status.AdapterState.SessionID).To(Equal("sdk-session-1"))
			g.Expect(conv.Status.AdapterState.Resumable).To(BeTrue())
		}).Should(Succeed())

		By("checkpoints need the caller's own right to create Checkpoints")
		_, err = api.Checkpoint(ctx, ns, "conv", wire.CheckpointRequest{Name: "from-api"})
		Expect(problemStatus(err)).To(Equal(403))
		env.GrantCheckpointCreate(ns, "agent", "checkpointer")
		var name string
		Eventually(func() error { // RBAC and the review cache take a moment
			name, err = api.Checkpoint(ctx, ns, "conv", wire.CheckpointRequest{Name: "from-api"})
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(name).To(Equal("from-api"))
		ckpt := &parleyv1alpha1.Checkpoint{}
		ckpt.Namespace, ckpt.Name = ns, name
		Eventually(env.CheckpointReady(ckpt)).Should(Succeed())
		Expect(ckpt.Spec.Reason).To(Equal(parleyv1alpha1.CheckpointManual))
		Expect(ckpt.Status.Messages).To(Equal(int64(1)))

		By("following: messages appended after the stream started arrive in order")
		followCtx, stop := context.WithCancel(ctx)
		defer stop()
		got := make(chan string, 10)
		go func() {
			defer GinkgoRecover()
			_ = api.Follow(followCtx, ns, "conv", first.Sequences[len(first.Sequences)-1], func(m conversation.Message) error {
				got <- m.ID
				return nil
			})
		}()
		_, err = api.Append(ctx, ns, "conv", []conversation.Message{operatorenv.TextMessage("f1", "user", "one"), operatorenv.TextMessage("f2", "assistant", "two")})
		Expect(err).NotTo(HaveOccurred())
		Eventually(got).Should(Receive(Equal("f1")))
		Eventually(got).Should(Receive(Equal("f2")))
		stop()

		By("compaction on demand: the request is recorded for the controller")
		Expect(api.Compact(ctx, ns, "conv")).To(Succeed())
		env.Fetch(conv)(Default)
		Expect(conv.Annotations).To(HaveKey("parley.dev/compact-requested-at"))
	})

	It("serves the resume bundle a new pod would mount, cut at the latest complete turn or at ?turn", func() {
		ns := env.AgentNamespace()
		conv := env.LiveConversation(ns, "conv")
		pod := env.AgentPodOf(conv)
		api, err := parleyclient.New(parleyclient.Options{URL: sessionURL, Token: env.AgentToken(ns, "agent", pod)})
		Expect(err).NotTo(HaveOccurred())
		_, err = api.Append(ctx, ns, "conv", []conversation.Message{
			operatorenv.TextMessage("u1", "user", "one"), operatorenv.TextMessage("a1", "assistant", "one"),
			operatorenv.TextMessage("u2", "user", "two"), operatorenv.TextMessage("a2", "assistant", "two"),
			{ID: "u3", Role: conversation.RoleUser, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: "three"}}},
			{ID: "a3", Role: conversation.RoleAssistant, Blocks: []conversation.Block{{Type: conversation.BlockToolUse, ToolUseID: "t1", ToolName: "search", Input: []byte(`{}`)}}},
		})
		Expect(err).NotTo(HaveOccurred())

		manifest := func(b *wire.ResumeBundle) bundle.Manifest {
			var m bundle.Manifest
			Expect(json.Unmarshal([]byte(b.Files[bundle.ConversationFile]), &m)).To(Succeed())
			return m
		}
		latest, err := api.Resume(ctx, ns, "conv", 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(latest.Turn).To(Equal(2), "turn 3 waits for its tool result")
		Expect(latest.SessionID).To(Equal(conv.Status.SessionID))
		Expect(latest.Files).To(HaveKey(bundle.OpenAIFile))
		Expect(latest.Files).To(HaveKey(bundle.AnthropicFile))
		Expect(manifest(latest).Messages).To(Equal(4), "two complete turns (the system prompt is kept apart)")

		first, err := api.Resume(ctx, ns, "conv", 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(manifest(first).Turns).To(Equal(1))

		_, err = api.Resume(ctx, ns, "conv", 9)
		Expect(problemStatus(err)).To(Equal(422))
		status, p, _ := rawCall(http.MethodGet, wire.ConversationPath(ns, "conv")+"/resume?turn=-1", env.AgentToken(ns, "agent", pod), nil)
		Expect(status).To(Equal(400))
		Expect(p.Type).To(Equal(wire.ProblemMalformed))
	})
})
