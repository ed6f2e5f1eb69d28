package blackbox_test

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history/s3"
)

// historyOnly is a Conversation keeping its history in ConfigMaps, with no agent.
func historyOnly(ns, name string) *parleyv1alpha1.Conversation {
	return &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       parleyv1alpha1.ConversationSpec{History: parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}}},
	}
}

// inBucket is a Conversation keeping its history on store, under a prefix of its own.
func inBucket(ns, name string, store s3.Config) *parleyv1alpha1.Conversation {
	return &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: parleyv1alpha1.ConversationSpec{History: parleyv1alpha1.HistorySpec{ObjectStore: &parleyv1alpha1.ObjectStoreHistory{
			Endpoint: store.Endpoint, Bucket: store.Bucket, Prefix: name, ForcePathStyle: true, Insecure: true,
			CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: "s3"},
		}}},
	}
}

// withAgent gives conv an agent running as serviceAccount ("" leaves it unset: default).
func withAgent(conv *parleyv1alpha1.Conversation, serviceAccount string) *parleyv1alpha1.Conversation {
	conv.Spec.Agent = &parleyv1alpha1.AgentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		ServiceAccountName: serviceAccount,
		Containers:         []corev1.Container{{Name: "agent", Image: "registry.example/agent:1"}},
	}}}
	return conv
}

// summarizerSecret is the Secret every summarizer of these tests takes its key from.
const summarizerSecret = "llm-key"

// withSummarizer makes conv compact by summaries from endpoint (plain http allowed), with the
// key in Secret summarizerSecret. The window is small: a compaction (threshold at 80% of 1,000 tokens)
// folds down to 400 tokens, so an append of six messages of fifty words (about 330 tokens)
// after a compaction gives a forced compaction something to fold, and two reach the threshold.
func withSummarizer(conv *parleyv1alpha1.Conversation, endpoint string) *parleyv1alpha1.Conversation {
	maxTokens := int64(1000)
	conv.Spec.Context = parleyv1alpha1.ContextSpec{
		MaxTokens: &maxTokens, Strategy: parleyv1alpha1.CompactionSummarize, KeepRecentMessages: 2,
		Summarizer: &parleyv1alpha1.SummarizerSpec{
			Provider: parleyv1alpha1.SummarizerOpenAI, Endpoint: endpoint, Model: "summaries-1", Insecure: strings.HasPrefix(endpoint, "http://"),
			CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: summarizerSecret},
		},
	}
	return conv
}

// appendBody is the JSON of an append of n messages of text, ids prefix-0, prefix-1, …, turns
// of a user message and an answer.
func appendBody(prefix string, n int, text string) []byte {
	msgs := make([]conversation.Message, n)
	for i := range msgs {
		role := conversation.RoleUser
		if i%2 == 1 {
			role = conversation.RoleAssistant
		}
		msgs[i] = conversation.Message{
			ID: fmt.Sprintf("%s-%d", prefix, i), Role: role,
			Blocks: []conversation.Block{{Type: conversation.BlockText, Text: text}},
		}
	}
	b, err := json.Marshal(map[string]any{"messages": msgs})
	if err != nil {
		panic(err) // messages always marshal
	}
	return b
}

// convPath is the Session API path of a conversation.
func convPath(ns, name string) string {
	return "/v1/namespaces/" + ns + "/conversations/" + name
}
