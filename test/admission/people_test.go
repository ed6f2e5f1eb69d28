package admission

import (
	"fmt"
	"sync/atomic"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// The roles dist/install.yaml ships for people (config/rbac, with config/default's prefix).
const (
	editorRole           = "parley-conversation-editor-role"
	checkpointEditorRole = "parley-checkpoint-editor-role"
)

var serial atomic.Int64

func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, serial.Add(1)) }

// newNamespace creates a namespace with annotations (key, value pairs).
func newNamespace(annotations ...string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unique("tenant"), Annotations: map[string]string{}}}
	for i := 0; i+1 < len(annotations); i += 2 {
		ns.Annotations[annotations[i]] = annotations[i+1]
	}
	Expect(admin.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// person is a user of the API server and their client.
type person struct {
	client.Client
	name string
}

// newUser provisions a user (a client certificate) bound in ns to the ClusterRoles named.
func newUser(ns, name string, clusterRoles ...string) person {
	user := crenvtest.User{Name: unique(name)}
	u, err := testEnv.AddUser(user, nil)
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(u.Config(), client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	p := person{Client: c, name: user.Name}
	for _, role := range clusterRoles {
		bind(ns, p, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role})
	}
	return p
}

// grant gives p the rules in ns (a Role of its own and its binding).
func grant(ns string, p person, rules ...rbacv1.PolicyRule) {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: unique(p.name)}, Rules: rules}
	Expect(admin.Create(ctx, role)).To(Succeed())
	bind(ns, p, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name})
}

func bind(ns string, p person, ref rbacv1.RoleRef) {
	Expect(admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: unique(p.name)},
		RoleRef:    ref,
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: p.name}},
	})).To(Succeed())
}

// rule is a PolicyRule on resources of group, optionally limited to names.
func rule(group, resource string, verbs []string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs, ResourceNames: names}
}

// historyOnly is a Conversation that keeps history in ConfigMaps and runs no agent.
func historyOnly(ns, name string) *parleyv1alpha1.Conversation {
	return &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: parleyv1alpha1.ConversationSpec{
			History: parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}},
		},
	}
}

// withAgent gives conv an agent running as serviceAccount ("" leaves serviceAccountName unset).
func withAgent(conv *parleyv1alpha1.Conversation, serviceAccount string) *parleyv1alpha1.Conversation {
	conv.Spec.Agent = &parleyv1alpha1.AgentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		ServiceAccountName: serviceAccount,
		Containers:         []corev1.Container{{Name: "agent", Image: "registry.example/agent:1"}},
	}}}
	return conv
}

// withSummarizer makes conv compact by summaries from endpoint, with the key in Secret secret.
func withSummarizer(conv *parleyv1alpha1.Conversation, endpoint, secret string) *parleyv1alpha1.Conversation {
	conv.Spec.Context = parleyv1alpha1.ContextSpec{
		Strategy: parleyv1alpha1.CompactionSummarize,
		Summarizer: &parleyv1alpha1.SummarizerSpec{
			Provider: parleyv1alpha1.SummarizerOpenAI, Endpoint: endpoint, Model: "summaries-1",
			CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: secret},
		},
	}
	return conv
}

// forbiddenBecause matches the error of a request the admission policy refused.
func forbiddenBecause(parts ...string) OmegaMatcher {
	ms := make([]OmegaMatcher, 0, 1+len(parts))
	ms = append(ms, MatchError(ContainSubstring("ValidatingAdmissionPolicy")))
	for _, p := range parts {
		ms = append(ms, MatchError(ContainSubstring(p)))
	}
	return SatisfyAll(ms...)
}

// historyCondition is the HistoryAvailable condition of the Conversation ns/name, once it has one.
func historyCondition(g Gomega, ns, name string) metav1.Condition {
	conv := &parleyv1alpha1.Conversation{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, conv)).To(Succeed())
	for _, c := range conv.Status.Conditions {
		if c.Type == parleyv1alpha1.ConditionHistoryAvailable {
			return c
		}
	}
	g.Expect(conv.Status.Conditions).To(ContainElement(HaveField("Type", parleyv1alpha1.ConditionHistoryAvailable)))
	return metav1.Condition{}
}
