package validation

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/parley-dev/parley/test/support/repopath"
)

// createFromYAML creates the object a user would kubectl-apply, so invalid values that Go types
// cannot even hold (a ttl of "banana") reach the apiserver as they would in real life.
func createFromYAML(doc string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		return nil, fmt.Errorf("test YAML does not parse: %w", err)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	if obj.GetName() == "" {
		obj.SetGenerateName("v-")
	}
	return obj, k8sClient.Create(ctx, obj)
}

// conversation wraps a spec fragment (indented YAML under spec:) into a Conversation.
func conversationYAML(spec string) string {
	return "apiVersion: parley.dev/v1alpha1\nkind: Conversation\nspec:\n" + indent(spec)
}

func checkpointYAML(spec string) string {
	return "apiVersion: parley.dev/v1alpha1\nkind: Checkpoint\nspec:\n" + indent(spec)
}

// objectStoreWith is an objectStore history with one more field.
func objectStoreWith(field string) string {
	return "history:\n  objectStore:\n    endpoint: s3.example.com\n    bucket: parley\n    credentialsSecretRef: {name: s3}\n    " + field + "\n"
}

func indent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

const cmHistory = "history:\n  configMap: {}\n"

// withAgent is a Conversation spec with a valid agent plus the given agent field.
func withAgent(field string) string {
	return cmHistory + "agent:\n  " + field + "\n  template:\n    spec:\n      containers: [{name: agent, image: agent:1}]\n"
}

var _ = Describe("Admission of Conversations and Checkpoints by the real apiserver", func() {
	DescribeTable("rejects a malformed object with a message a person understands",
		func(doc string, wantMessage string) {
			_, err := createFromYAML(doc)
			Expect(err).To(HaveOccurred(), "the apiserver admitted an invalid object")
			Expect(err.Error()).To(ContainSubstring(wantMessage))
		},
		Entry("a Conversation without history",
			conversationYAML("lifetime:\n  ttl: 1h"), "spec.history: Required value"),
		Entry("two history backends",
			conversationYAML(`history:
  configMap: {}
  objectStore:
    endpoint: s3.example.com
    bucket: parley
    credentialsSecretRef: {name: s3}`), "history needs exactly one backend: configMap or objectStore"),
		Entry("no history backend at all",
			conversationYAML("history: {}"), "history needs exactly one backend: configMap or objectStore"),
		Entry("a sessionID that is not a UUID",
			conversationYAML(cmHistory+"sessionID: not-a-uuid"), "sessionID must be a UUID"),
		Entry("a zero ttl",
			conversationYAML(cmHistory+"lifetime:\n  ttl: 0s"), "lifetime.ttl must be positive"),
		Entry("a negative ttl",
			conversationYAML(cmHistory+"lifetime:\n  ttl: -5m"), "lifetime.ttl must be positive"),
		Entry("a ttl that is not a duration",
			conversationYAML(cmHistory+"lifetime:\n  ttl: banana"), "spec.lifetime.ttl in body should match"),
		Entry("a zero idle timeout",
			conversationYAML(cmHistory+"lifetime:\n  idleTimeout: 0s"), "lifetime.idleTimeout must be positive"),
		Entry("a negative deleteAfter",
			conversationYAML(cmHistory+"lifetime:\n  deleteAfter: -1h"), "lifetime.deleteAfter must not be negative"),
		Entry("an unknown expiration policy",
			conversationYAML(cmHistory+"lifetime:\n  expirationPolicy: Shred"), `Unsupported value: "Shred"`),
		Entry("compactAtPercent 0",
			conversationYAML(cmHistory+"context:\n  compactAtPercent: 0"), "spec.context.compactAtPercent: Invalid value: 0: spec.context.compactAtPercent in body should be greater than or equal to 1"),
		Entry("compactAtPercent above 100",
			conversationYAML(cmHistory+"context:\n  compactAtPercent: 101"), "should be less than or equal to 100"),
		Entry("keepRecentMessages 0",
			conversationYAML(cmHistory+"context:\n  keepRecentMessages: 0"), "spec.context.keepRecentMessages in body should be greater than or equal to 1"),
		Entry("maxTokens 0",
			conversationYAML(cmHistory+"context:\n  maxTokens: 0"), "spec.context.maxTokens in body should be greater than or equal to 1"),
		Entry("an unknown compaction strategy",
			conversationYAML(cmHistory+"context:\n  strategy: Magic"), `Unsupported value: "Magic"`),
		Entry("an unknown tokenizer",
			conversationYAML(cmHistory+"context:\n  tokenizer: gpt2"), `Unsupported value: "gpt2"`),
		Entry("Summarize without a summarizer",
			conversationYAML(cmHistory+"context:\n  strategy: Summarize"), "context.strategy Summarize needs context.summarizer"),
		Entry("a summarizer endpoint that is not http(s)",
			conversationYAML(cmHistory+`context:
  strategy: Summarize
  summarizer:
    provider: openai
    endpoint: ftp://models.example.com
    model: gpt-4o-mini
    credentialsSecretRef: {name: key}`), "summarizer.endpoint must be an http(s) URL"),
		Entry("a plain-http summarizer endpoint without insecure",
			conversationYAML(cmHistory+`context:
  strategy: Summarize
  summarizer:
    provider: openai
    endpoint: http://models.example.com
    model: gpt-4o-mini
    credentialsSecretRef: {name: key}`), "summarizer.endpoint must be an https:// URL"),
		Entry("an objectStore without credentials",
			conversationYAML(`history:
  objectStore:
    endpoint: s3.example.com
    bucket: parley`), "spec.history.objectStore.credentialsSecretRef: Required value"),
		Entry("an objectStore whose credentials Secret has no name",
			conversationYAML(`history:
  objectStore:
    endpoint: s3.example.com
    bucket: parley
    credentialsSecretRef: {}`), "spec.history.objectStore.credentialsSecretRef.name: Required value"),
		Entry("a system prompt reference without a key",
			conversationYAML(cmHistory+"systemPrompt:\n  configMapKeyRef: {name: prompts}"), "spec.systemPrompt.configMapKeyRef.key: Required value"),
		Entry("credentials written into the endpoint",
			conversationYAML(`history:
  objectStore:
    endpoint: https://AKIA:secret@s3.example.com
    bucket: parley
    credentialsSecretRef: {name: s3}`), "objectStore.endpoint must not carry credentials"),
		Entry("an objectStore without a bucket",
			conversationYAML(`history:
  objectStore:
    endpoint: s3.example.com
    credentialsSecretRef: {name: s3}`), "spec.history.objectStore.bucket: Required value"),
		Entry("a bucket name S3 would refuse",
			conversationYAML(`history:
  objectStore:
    endpoint: s3.example.com
    bucket: My_Bucket
    credentialsSecretRef: {name: s3}`), "spec.history.objectStore.bucket in body should match"),
		Entry("an objectStore prefix climbing out of the bucket",
			conversationYAML(objectStoreWith("prefix: team-a/../team-b")), "objectStore.prefix must not hold a '.' or '..' segment"),
		Entry("an objectStore prefix with a leading slash",
			conversationYAML(objectStoreWith("prefix: /histories")), "objectStore.prefix must be key segments of letters, digits"),
		Entry("an objectStore prefix with a character keys should not hold",
			conversationYAML(objectStoreWith(`prefix: "a\\b"`)), "objectStore.prefix must be key segments of letters, digits"),
		Entry("a zero objectStore maxBytes",
			conversationYAML(objectStoreWith(`maxBytes: "0"`)), "objectStore.maxBytes must be positive"),
		Entry("an objectStore maxBytes past what a replica should hold",
			conversationYAML(objectStoreWith("maxBytes: 1Gi")), "objectStore.maxBytes must be at most 256Mi: a replica holds a conversation's current epoch in memory"),
		Entry("a zero configMap maxBytes",
			conversationYAML("history:\n  configMap:\n    maxBytes: \"0\""), "maxBytes must be positive"),
		Entry("a configMap maxBytes past what etcd should hold",
			conversationYAML("history:\n  configMap:\n    maxBytes: 1Gi"), "maxBytes must be at most 64Mi; use objectStore for larger histories"),
		Entry("a system prompt given twice",
			conversationYAML(cmHistory+`systemPrompt:
  text: hello
  configMapKeyRef: {name: prompts, key: support}`), "systemPrompt needs exactly one of text or configMapKeyRef"),
		Entry("a negative maxRestarts",
			conversationYAML(withAgent("maxRestarts: -1")), "spec.agent.maxRestarts in body should be greater than or equal to 0"),
		Entry("a backoff whose initial delay exceeds its maximum",
			conversationYAML(withAgent("backoff: {initial: 10m, max: 1m}")), "backoff.initial must not exceed backoff.max"),
		Entry("a zero initial backoff",
			conversationYAML(withAgent("backoff: {initial: 0s, max: 1m}")), "backoff.initial must be positive"),
		Entry("a negative initial backoff",
			conversationYAML(withAgent("backoff: {initial: -10s}")), "backoff.initial must be positive"),
		// Any max ≤ 0 is also below initial (defaulted to 10s when absent), so
		// the apiserver reports both rules; the message names this one.
		Entry("a zero idle.suspendAfter",
			conversationYAML(withAgent("idle: {suspendAfter: 0s}")), "idle.suspendAfter must be positive"),
		Entry("a negative idle.suspendAfter",
			conversationYAML(withAgent("idle: {suspendAfter: -5m}")), "idle.suspendAfter must be positive"),
		Entry("an idle block without suspendAfter",
			conversationYAML(withAgent("idle: {}")), "suspendAfter: Required value"),
		Entry("a zero maximum backoff",
			conversationYAML(withAgent("backoff: {max: 0s}")), "backoff.max must be positive"),
		Entry("a negative maximum backoff",
			conversationYAML(withAgent("backoff: {initial: 1s, max: -1m}")), "backoff.max must be positive"),
		Entry("an unknown adapter",
			conversationYAML(withAgent("adapter: langchain-classic")), `Unsupported value: "langchain-classic"`),
		Entry("an agent pod template without containers",
			conversationYAML(cmHistory+"agent:\n  template:\n    spec: {}"), "spec.agent.template.spec.containers: Required value"),
		Entry("an agent pod template restarting in place",
			conversationYAML(cmHistory+"agent:\n  template:\n    spec:\n      restartPolicy: OnFailure\n      containers: [{name: agent, image: agent:1}]\n"),
			"agent.template.spec.restartPolicy must be Never (or unset)"),
		Entry("a relative resume mount path",
			conversationYAML(withAgent("resumeMountPath: var/run/parley")), "spec.agent.resumeMountPath in body should match"),
		Entry("a checkpoint interval of zero",
			conversationYAML(cmHistory+"checkpoints:\n  interval: 0s"), "checkpoints.interval must be positive"),
		Entry("keeping zero checkpoints",
			conversationYAML(cmHistory+"checkpoints:\n  keep: 0"), "spec.checkpoints.keep in body should be greater than or equal to 1"),
		Entry("a forkFrom without a checkpoint name",
			conversationYAML(cmHistory+"forkFrom: {}"), "spec.forkFrom.checkpoint: Required value"),
		Entry("a Checkpoint without a conversation",
			checkpointYAML("reason: Manual"), "spec.conversationRef: Required value"),
		Entry("a Checkpoint with an unknown reason",
			checkpointYAML("conversationRef: {name: c}\nreason: Whim"), `Unsupported value: "Whim"`),
		Entry("a Checkpoint of a negative turn",
			checkpointYAML("conversationRef: {name: c}\nturn: -1"), "spec.turn in body should be greater than or equal to 0"),
	)

	It("admits a minimal Conversation and applies every default", func() {
		obj, err := createFromYAML(conversationYAML(cmHistory))
		Expect(err).NotTo(HaveOccurred())
		spec := obj.Object["spec"].(map[string]any)
		Expect(spec).To(HaveKeyWithValue("lifetime", map[string]any{"ttl": "24h", "expirationPolicy": "Retain"}))
		Expect(spec).To(HaveKeyWithValue("context", map[string]any{
			"compactAtPercent": int64(80), "strategy": "SlidingWindow", "keepRecentMessages": int64(10), "tokenizer": "cl100k_base",
		}))
		Expect(spec).To(HaveKeyWithValue("history", map[string]any{"configMap": map[string]any{"maxBytes": "8Mi"}}))
		Expect(spec).To(HaveKeyWithValue("suspend", false))
	})

	It("admits an agent and defaults its restart policy, backoff, mount path and adapter", func() {
		obj, err := createFromYAML(conversationYAML(cmHistory + `agent:
  template:
    spec:
      containers: [{name: agent, image: agent:1}]`))
		Expect(err).NotTo(HaveOccurred())
		agent := obj.Object["spec"].(map[string]any)["agent"].(map[string]any)
		Expect(agent).To(HaveKeyWithValue("maxRestarts", int64(5)))
		Expect(agent).To(HaveKeyWithValue("backoff", map[string]any{"initial": "10s", "max": "5m"}))
		Expect(agent).To(HaveKeyWithValue("resumeMountPath", "/var/run/parley"))
		Expect(agent).To(HaveKeyWithValue("adapter", "generic"))
	})

	It("admits a Checkpoint and defaults its reason to Manual", func() {
		obj, err := createFromYAML(checkpointYAML("conversationRef: {name: somewhere}"))
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.Object["spec"]).To(HaveKeyWithValue("reason", "Manual"))
	})

	It("admits a fork and a pinned session id at creation", func() {
		_, err := createFromYAML(conversationYAML(cmHistory + `sessionID: 0B7E1A3C-5F2D-4C8E-9A41-6D2F0E8B7C15
forkFrom: {checkpoint: before-refactor}`))
		Expect(err).NotTo(HaveOccurred())
	})

	Describe("updates", func() {
		// update applies mutate to a fresh copy of obj and sends it, returning the apiserver's answer.
		// A conflict means "read again", as for a user.
		update := func(obj *unstructured.Unstructured, mutate func(spec map[string]any)) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				fresh := &unstructured.Unstructured{}
				fresh.SetGroupVersionKind(obj.GroupVersionKind())
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), fresh)).To(Succeed())
				mutate(fresh.Object["spec"].(map[string]any))
				return k8sClient.Update(ctx, fresh)
			})
		}

		It("refuses to change a pinned sessionID", func() {
			obj, err := createFromYAML(conversationYAML(cmHistory + "sessionID: 6f1c2b8e-3d4a-4e5f-9a7b-1c2d3e4f5a6b"))
			Expect(err).NotTo(HaveOccurred())
			err = update(obj, func(s map[string]any) { s["sessionID"] = "7f1c2b8e-3d4a-4e5f-9a7b-1c2d3e4f5a6b" })
			Expect(err).To(MatchError(ContainSubstring("spec.sessionID is immutable once set")))
		})

		It("refuses to remove a pinned sessionID", func() {
			obj, err := createFromYAML(conversationYAML(cmHistory + "sessionID: 6f1c2b8e-3d4a-4e5f-9a7b-1c2d3e4f5a6b"))
			Expect(err).NotTo(HaveOccurred())
			err = update(obj, func(s map[string]any) { delete(s, "sessionID") })
			Expect(err).To(MatchError(ContainSubstring("spec.sessionID is immutable once set")))
		})

		It("refuses a forkFrom added after creation", func() {
			obj, err := createFromYAML(conversationYAML(cmHistory))
			Expect(err).NotTo(HaveOccurred())
			err = update(obj, func(s map[string]any) { s["forkFrom"] = map[string]any{"checkpoint": "x"} })
			Expect(err).To(MatchError(ContainSubstring("spec.forkFrom can only be set when the Conversation is created")))
		})

		It("refuses to point forkFrom at another checkpoint", func() {
			obj, err := createFromYAML(conversationYAML(cmHistory + "forkFrom: {checkpoint: a}"))
			Expect(err).NotTo(HaveOccurred())
			err = update(obj, func(s map[string]any) { s["forkFrom"] = map[string]any{"checkpoint": "b"} })
			Expect(err).To(MatchError(ContainSubstring("spec.forkFrom can only be set when the Conversation is created")))
		})

		It("refuses to switch the history backend", func() {
			obj, err := createFromYAML(conversationYAML(cmHistory))
			Expect(err).NotTo(HaveOccurred())
			err = update(obj, func(s map[string]any) {
				s["history"] = map[string]any{"objectStore": map[string]any{
					"endpoint": "s3.example.com", "bucket": "parley", "credentialsSecretRef": map[string]any{"name": "s3"},
				}}
			})
			Expect(err).To(MatchError(ContainSubstring("the history backend cannot be switched after creation")))
		})

		It("refuses to move an objectStore history to another bucket", func() {
			obj, err := createFromYAML(conversationYAML(`history:
  objectStore:
    endpoint: s3.example.com
    bucket: parley
    credentialsSecretRef: {name: s3}`))
			Expect(err).NotTo(HaveOccurred())
			err = update(obj, func(s map[string]any) {
				s["history"].(map[string]any)["objectStore"].(map[string]any)["bucket"] = "elsewhere"
			})
			Expect(err).To(MatchError(ContainSubstring("objectStore endpoint, bucket and prefix are immutable")))
			err = update(obj, func(s map[string]any) {
				s["history"].(map[string]any)["objectStore"].(map[string]any)["prefix"] = "moved/"
			})
			Expect(err).To(MatchError(ContainSubstring("objectStore endpoint, bucket and prefix are immutable")))
			Expect(update(obj, func(s map[string]any) {
				s["history"].(map[string]any)["objectStore"].(map[string]any)["region"] = "eu-west-1"
			})).To(Succeed(), "fields other than the location stay editable")
		})

		It("defaults the objectStore budget and allows raising it to its ceiling", func() {
			obj, err := createFromYAML(conversationYAML(objectStoreWith("prefix: team-a/histories/")))
			Expect(err).NotTo(HaveOccurred())
			objectStore := obj.Object["spec"].(map[string]any)["history"].(map[string]any)["objectStore"].(map[string]any)
			Expect(objectStore).To(HaveKeyWithValue("maxBytes", "64Mi"))
			Expect(update(obj, func(s map[string]any) {
				s["history"].(map[string]any)["objectStore"].(map[string]any)["maxBytes"] = "256Mi"
			})).To(Succeed())
		})

		It("allows raising the ttl and the configMap budget", func() {
			obj, err := createFromYAML(conversationYAML(cmHistory))
			Expect(err).NotTo(HaveOccurred())
			Expect(update(obj, func(s map[string]any) {
				s["lifetime"].(map[string]any)["ttl"] = "48h"
				s["history"].(map[string]any)["configMap"].(map[string]any)["maxBytes"] = "16Mi"
			})).To(Succeed())
		})

		It("refuses any edit of a Checkpoint spec", func() {
			obj, err := createFromYAML(checkpointYAML("conversationRef: {name: c}"))
			Expect(err).NotTo(HaveOccurred())
			err = update(obj, func(s map[string]any) { s["reason"] = "Crash" })
			Expect(err).To(MatchError(ContainSubstring("Checkpoint spec is immutable; create a new Checkpoint instead")))
			err = update(obj, func(s map[string]any) { s["turn"] = int64(3) })
			Expect(err).To(MatchError(ContainSubstring("Checkpoint spec is immutable")))
		})
	})
})

// TestEveryCELRuleHasASpec holds docs/architecture.md to its word: every CEL
// rule's message in the CRDs is checked by a spec of this file (a string
// literal of it that is part of the message; the specs assert those).
func TestEveryCELRuleHasASpec(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "validation_test.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var literals []string
	ast.Inspect(file, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && len(s) >= 20 {
				literals = append(literals, s)
			}
		}
		return true
	})
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs found: %v", err)
	}
	messages := make([]string, 0, 64)
	for _, path := range crds {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		messages = append(messages, celMessages(doc)...)
	}
	if len(messages) == 0 {
		t.Fatal("no CEL rules found in the CRDs")
	}
	for _, m := range messages {
		covered := false
		for _, lit := range literals {
			covered = covered || strings.Contains(m, lit)
		}
		if !covered {
			t.Errorf("CEL rule %q has no spec in validation_test.go", m)
		}
	}
}

// celMessages returns the message of every x-kubernetes-validations rule
// under node, or the rule itself when it has no message.
func celMessages(node any) []string {
	var out []string
	switch n := node.(type) {
	case map[string]any:
		for key, v := range n {
			if rules, ok := v.([]any); ok && key == "x-kubernetes-validations" {
				for _, r := range rules {
					rule, _ := r.(map[string]any)
					msg, _ := rule["message"].(string)
					if msg == "" {
						msg, _ = rule["rule"].(string)
					}
					out = append(out, msg)
				}
				continue
			}
			out = append(out, celMessages(v)...)
		}
	case []any:
		for _, v := range n {
			out = append(out, celMessages(v)...)
		}
	}
	return out
}
