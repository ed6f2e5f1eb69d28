package admission

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

var (
	createPods      = rule("", "pods", []string{"create"})
	conversationRW  = rule(parleyv1alpha1.GroupVersion.Group, "conversations", []string{"create", "get", "list", "watch", "update", "patch"})
	readHistoryVerb = []string{"get"}
)

var _ = Describe("An agent in a Conversation", func() {
	It("is refused to an author who may not create pods in the namespace, and admitted once they may", func() {
		ns := newNamespace()
		alice := newUser(ns, "alice", editorRole)
		conv := withAgent(historyOnly(ns, "agent"), "")

		Expect(alice.Create(ctx, conv.DeepCopy())).To(forbiddenBecause(
			"spec.agent makes Parley run its pod template as a pod of namespace "+ns,
			alice.name+" may not create pods in namespace "+ns))

		grant(ns, alice, createPods)
		Eventually(func() error { return alice.Create(ctx, conv.DeepCopy()) }).Should(Succeed())
	})

	It("is re-checked when the pod template changes, and not for other changes", func() {
		ns := newNamespace()
		conv := withAgent(historyOnly(ns, "agent"), "")
		Expect(admin.Create(ctx, conv)).To(Succeed())
		bob := newUser(ns, "bob", editorRole)

		suspend := &parleyv1alpha1.Conversation{}
		Expect(bob.Get(ctx, client.ObjectKeyFromObject(conv), suspend)).To(Succeed())
		patch := client.MergeFrom(suspend.DeepCopy())
		suspend.Spec.Suspend = new(true)
		Expect(bob.Patch(ctx, suspend, patch)).To(Succeed(), "a change that leaves the template alone needs no pod rights")

		hijack := &parleyv1alpha1.Conversation{}
		Expect(bob.Get(ctx, client.ObjectKeyFromObject(conv), hijack)).To(Succeed())
		patch = client.MergeFrom(hijack.DeepCopy())
		hijack.Spec.Agent.Template.Spec.Containers[0].Image = "registry.example/miner:1"
		hijack.Spec.Agent.Template.Spec.HostNetwork = true
		Expect(bob.Patch(ctx, hijack, patch)).To(forbiddenBecause(bob.name + " may not create pods in namespace " + ns))
	})

	It("is re-checked when what Parley adds to the pod changes: the bundle's mount path or the adapter", func() {
		ns := newNamespace()
		conv := withAgent(historyOnly(ns, "agent"), "")
		Expect(admin.Create(ctx, conv)).To(Succeed())
		dave := newUser(ns, "dave", editorRole)

		// The bundle mounted over a directory of the agent's image, or CLAUDE_CONFIG_DIR pointed
		// into it: a pod the admitted template never asked for.
		remount := &parleyv1alpha1.Conversation{}
		Expect(dave.Get(ctx, client.ObjectKeyFromObject(conv), remount)).To(Succeed())
		patch := client.MergeFrom(remount.DeepCopy())
		remount.Spec.Agent.ResumeMountPath = "/etc/ssl/certs"
		Expect(dave.Patch(ctx, remount, patch)).To(forbiddenBecause(dave.name + " may not create pods in namespace " + ns))

		adapter := &parleyv1alpha1.Conversation{}
		Expect(dave.Get(ctx, client.ObjectKeyFromObject(conv), adapter)).To(Succeed())
		patch = client.MergeFrom(adapter.DeepCopy())
		adapter.Spec.Agent.Adapter = parleyv1alpha1.AdapterClaudeAgentSDK
		Expect(dave.Patch(ctx, adapter, patch)).To(forbiddenBecause(dave.name + " may not create pods in namespace " + ns))

		restarts := &parleyv1alpha1.Conversation{}
		Expect(dave.Get(ctx, client.ObjectKeyFromObject(conv), restarts)).To(Succeed())
		patch = client.MergeFrom(restarts.DeepCopy())
		restarts.Spec.Agent.MaxRestarts = new(int32(1))
		Expect(dave.Patch(ctx, restarts, patch)).To(Succeed(), "how often Parley restarts the agent changes no pod")
	})

	It("runs only as a ServiceAccount the namespace allows, when its annotation lists them", func() {
		ns := newNamespace("parley.dev/agent-service-accounts", "parley-agent, helper")
		carol := newUser(ns, "carol", editorRole)
		grant(ns, carol, createPods)

		Eventually(func() error {
			return carol.Create(ctx, withAgent(historyOnly(ns, "as-default"), ""))
		}).Should(forbiddenBecause(
			`lets agents run only as the ServiceAccounts "parley-agent, helper"`, "runs as default"))

		sneaky := withAgent(historyOnly(ns, "as-alias"), "parley-agent")
		sneaky.Spec.Agent.Template.Spec.DeprecatedServiceAccount = "builder"
		Expect(carol.Create(ctx, sneaky)).To(forbiddenBecause("runs as parley-agent, builder"))

		Expect(carol.Create(ctx, withAgent(historyOnly(ns, "as-agent"), "helper"))).To(Succeed())
	})
})

var _ = Describe("A summarizer", func() {
	It("is given a Secret's key only by an author who may read that Secret", func() {
		ns := newNamespace()
		Expect(admin.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm-key"},
			StringData: map[string]string{"apiKey": "sk-not-for-dave"},
		})).To(Succeed())
		dave := newUser(ns, "dave", editorRole)
		conv := withSummarizer(historyOnly(ns, "summarized"), "https://llm.example.com", "llm-key")

		Expect(dave.Create(ctx, conv.DeepCopy())).To(forbiddenBecause(
			"send the apiKey of Secret llm-key", dave.name+" may not get Secret llm-key in namespace "+ns))

		grant(ns, dave, rule("", "secrets", []string{"get"}, "llm-key"))
		Eventually(func() error { return dave.Create(ctx, conv.DeepCopy()) }).Should(Succeed())

		By("someone else pointing the endpoint elsewhere is checked again")
		erin := newUser(ns, "erin", editorRole)
		moved := &parleyv1alpha1.Conversation{}
		Expect(erin.Get(ctx, client.ObjectKeyFromObject(conv), moved)).To(Succeed())
		patch := client.MergeFrom(moved.DeepCopy())
		moved.Spec.Context.Summarizer.Endpoint = "https://collector.example.net"
		Expect(erin.Patch(ctx, moved, patch)).To(forbiddenBecause(erin.name + " may not get Secret llm-key"))

		By("a change that leaves the summarizer alone needs no right to the Secret")
		Expect(erin.Get(ctx, client.ObjectKeyFromObject(conv), moved)).To(Succeed())
		patch = client.MergeFrom(moved.DeepCopy())
		moved.Spec.Context.KeepRecentMessages = 20
		Expect(erin.Patch(ctx, moved, patch)).To(Succeed())
	})

	It("is reached over https unless the spec opts into plain http", func() {
		ns := newNamespace()
		plain := withSummarizer(historyOnly(ns, "plain"), "http://llm.example.com", "llm-key")
		Expect(admin.Create(ctx, plain.DeepCopy())).To(MatchError(ContainSubstring(
			"summarizer.endpoint must be an https:// URL")))

		plain.Spec.Context.Summarizer.Insecure = true
		Expect(admin.Create(ctx, plain)).To(Succeed())
	})
})

var _ = Describe("A system prompt or seed from a ConfigMap", func() {
	It("is copied into the history only for an author who may read the ConfigMap", func() {
		ns := newNamespace()
		frank := newUser(ns, "frank", editorRole)
		conv := historyOnly(ns, "prompted")
		conv.Spec.SystemPrompt = &parleyv1alpha1.SystemPrompt{
			ConfigMapKeyRef: &parleyv1alpha1.ConfigMapKeyReference{Name: "team-secrets", Key: "db-password"},
		}
		Expect(frank.Create(ctx, conv.DeepCopy())).To(forbiddenBecause(
			"copy the named ConfigMap keys into the history", frank.name+" may not get every one of the ConfigMaps team-secrets"))

		grant(ns, frank, rule("", "configmaps", []string{"get"}, "team-secrets"))
		Eventually(func() error { return frank.Create(ctx, conv.DeepCopy()) }).Should(Succeed())
	})
})

var _ = Describe("A fork", func() {
	It("copies only a conversation its author may read", func() {
		ns := newNamespace()
		Expect(admin.Create(ctx, historyOnly(ns, "private"))).To(Succeed())
		Expect(admin.Create(ctx, historyOnly(ns, "mine"))).To(Succeed())
		Expect(admin.Create(ctx, &parleyv1alpha1.Checkpoint{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private-ckpt"},
			Spec: parleyv1alpha1.CheckpointSpec{
				ConversationRef: parleyv1alpha1.ConversationReference{Name: "private"}, Reason: parleyv1alpha1.CheckpointManual,
			},
		})).To(Succeed())
		// Per-conversation RBAC: gina may read the history of "mine" only.
		gina := newUser(ns, "gina", checkpointEditorRole)
		grant(ns, gina, conversationRW,
			rule(parleyv1alpha1.GroupVersion.Group, "conversations/history", readHistoryVerb, "mine"))
		fork := func(name, source string) *parleyv1alpha1.Conversation {
			c := historyOnly(ns, name)
			c.Spec.ForkFrom = &parleyv1alpha1.ForkSource{Checkpoint: "private-ckpt", Conversation: source}
			return c
		}

		Eventually(func() error { return gina.Create(ctx, fork("copy", "private")) }).Should(forbiddenBecause(
			"a fork copies the history of Conversation private", gina.name+" may not get conversations/history of private"))
		Expect(gina.Create(ctx, fork("copy", ""))).To(forbiddenBecause(
			"spec.forkFrom.conversation names none", "(get conversations/history), which "+gina.name+" lacks"))

		By("naming a conversation she may read does not make the controller copy another's Checkpoint")
		Expect(gina.Create(ctx, fork("disguised", "mine"))).To(Succeed())
		Eventually(func(g Gomega) {
			c := historyCondition(g, ns, "disguised")
			g.Expect(c.Reason).To(Equal(parleyv1alpha1.ReasonForkSourceMismatch))
			g.Expect(c.Message).To(ContainSubstring("belongs to Conversation private, not to mine"))
		}).Should(Succeed())

		grant(ns, gina, rule(parleyv1alpha1.GroupVersion.Group, "conversations/history", readHistoryVerb, "private"))
		Eventually(func() error { return gina.Create(ctx, fork("copy", "private")) }).Should(Succeed())
	})
})

var _ = Describe("A pinned session id", func() {
	It("never opens the history another live Conversation keeps", func() {
		ns := newNamespace()
		const sessionID = "0b7e1a3c-5f2d-4c8e-9a41-6d2f0e8b7c15"
		pinned := func(name string) *parleyv1alpha1.Conversation {
			c := historyOnly(ns, name)
			c.Spec.SessionID = sessionID
			c.Spec.History.ConfigMap.Name = "shared"
			c.Spec.SystemPrompt = &parleyv1alpha1.SystemPrompt{Text: "only for the keeper"}
			return c
		}
		Expect(admin.Create(ctx, pinned("keeper"))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(historyCondition(g, ns, "keeper").Status).To(Equal(metav1.ConditionTrue))
		}).Should(Succeed())

		hank := newUser(ns, "hank", editorRole)
		Expect(hank.Create(ctx, pinned("squatter"))).To(Succeed())
		Eventually(func(g Gomega) {
			c := historyCondition(g, ns, "squatter")
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(parleyv1alpha1.ReasonHistoryKeyTaken))
			g.Expect(c.Message).To(ContainSubstring("Conversation keeper already keeps its history"))
		}).Should(Succeed())
		squatter := &parleyv1alpha1.Conversation{}
		Consistently(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "squatter"}, squatter)).To(Succeed())
			g.Expect(squatter.Status.History).To(BeNil(), "the squatter summarised the keeper's history")
			g.Expect(historyCondition(g, ns, "squatter").Reason).To(Equal(parleyv1alpha1.ReasonHistoryKeyTaken))
		}, "2s").Should(Succeed())
	})
})
