package operatorenv

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/onsi/gomega"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/sessionapi"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
)

// The helpers below assert with Gomega: call them from Ginkgo specs (or inside Eventually).

// RandSuffix is a short random name suffix.
func RandSuffix() string { return uuid.NewString()[:8] }

// TextMessage is a message of one text block.
func TextMessage(id, role, text string) conversation.Message {
	return conversation.Message{ID: id, Role: conversation.Role(role), Blocks: []conversation.Block{{Type: conversation.BlockText, Text: text}}}
}

// NewConversation is a Conversation in namespace default named conv-…, with a ConfigMap
// history unless spec names one.
func NewConversation(spec parleyv1alpha1.ConversationSpec) *parleyv1alpha1.Conversation {
	if spec.History.ConfigMap == nil && spec.History.ObjectStore == nil {
		spec.History.ConfigMap = &parleyv1alpha1.ConfigMapHistory{}
	}
	return &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "conv-", Namespace: "default"},
		Spec:       spec,
	}
}

// Fetch reads obj again from the apiserver.
func (e *Env) Fetch(obj client.Object) func(g gomega.Gomega) {
	return func(g gomega.Gomega) {
		g.Expect(e.Client.Get(e.Ctx, client.ObjectKeyFromObject(obj), obj)).To(gomega.Succeed())
	}
}

// HistoryReady passes once conv reports HistoryAvailable=True.
func (e *Env) HistoryReady(conv *parleyv1alpha1.Conversation) func(g gomega.Gomega) {
	return func(g gomega.Gomega) {
		e.Fetch(conv)(g)
		g.Expect(meta.IsStatusConditionTrue(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)).To(gomega.BeTrue(),
			"HistoryAvailable: %+v", meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable))
	}
}

// CheckpointReady passes once ckpt is Ready.
func (e *Env) CheckpointReady(ckpt *parleyv1alpha1.Checkpoint) func(g gomega.Gomega) {
	return func(g gomega.Gomega) {
		e.Fetch(ckpt)(g)
		g.Expect(ckpt.Status.Phase).To(gomega.Equal(parleyv1alpha1.CheckpointReady), "%+v", ckpt.Status.Conditions)
	}
}

// EventReasons lists the reasons of the events regarding obj. The recorder sends
// events in the background, so callers poll it with Eventually.
func (e *Env) EventReasons(obj client.Object) []string {
	evs := &eventsv1.EventList{}
	gomega.Expect(e.Client.List(e.Ctx, evs, client.InNamespace(obj.GetNamespace()))).To(gomega.Succeed())
	var reasons []string
	for _, ev := range evs.Items {
		if ev.Regarding.UID == obj.GetUID() {
			reasons = append(reasons, ev.Reason)
		}
	}
	return reasons
}

// AgentToken mints a token of ServiceAccount sa for audience parley with the TokenRequest API,
// bound to a pod when pod is not nil (as the kubelet's projected volume does).
func (e *Env) AgentToken(namespace, sa string, pod *corev1.Pod) string {
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{wire.Audience}}}
	if pod != nil {
		tr.Spec.BoundObjectRef = &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	acct := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sa}}
	gomega.Expect(e.Client.SubResource("token").Create(e.Ctx, acct, tr)).To(gomega.Succeed())
	return tr.Status.Token
}

// AgentNamespace sets up a namespace with a ServiceAccount "agent" allowed to read and write
// conversations/history, as config/rbac's agent role grants it, and one "stranger" without.
func (e *Env) AgentNamespace() string {
	ns := "api-" + RandSuffix()
	gomega.Expect(e.Client.Create(e.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(gomega.Succeed())
	gomega.Expect(e.Client.Create(e.Ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stranger"}})).To(gomega.Succeed())
	e.GrantHistory(ns, "agent", []string{"get", "create"})
	return ns
}

// GrantHistory creates the ServiceAccount sa in ns and a Role bound to it (both named sa)
// granting verbs on conversations/history: on every conversation of ns, or on those named.
func (e *Env) GrantHistory(ns, sa string, verbs []string, names ...string) {
	gomega.Expect(e.Client.Create(e.Ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})).To(gomega.Succeed())
	e.bindRole(ns, sa, sa, rbacv1.PolicyRule{
		APIGroups: []string{"parley.dev"}, Resources: []string{"conversations/" + sessionapi.HistorySubresource},
		ResourceNames: names, Verbs: verbs,
	})
}

// GrantCheckpointCreate lets the ServiceAccount sa of ns create Checkpoints (what
// checkpoint-editor-role grants), by a Role and a RoleBinding named name.
func (e *Env) GrantCheckpointCreate(ns, sa, name string) {
	e.bindRole(ns, sa, name, rbacv1.PolicyRule{APIGroups: []string{"parley.dev"}, Resources: []string{"checkpoints"}, Verbs: []string{"create"}})
}

// bindRole creates a Role of rule and binds it to the ServiceAccount sa, both named name.
func (e *Env) bindRole(ns, sa, name string, rule rbacv1.PolicyRule) {
	gomega.Expect(e.Client.Create(e.Ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Rules:      []rbacv1.PolicyRule{rule},
	})).To(gomega.Succeed())
	gomega.Expect(e.Client.Create(e.Ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: sa}},
	})).To(gomega.Succeed())
}

// EditorToken sets up a ServiceAccount "editor" allowed to read, write and reset
// conversations/history in ns (what conversation-editor-role grants) and returns its token
// for audience parley.
func (e *Env) EditorToken(ns string) string {
	e.GrantHistory(ns, "editor", []string{"get", "create", "delete"})
	return e.AgentToken(ns, "editor", nil)
}

// LiveConversation creates a Conversation in ns and waits until its history is available.
func (e *Env) LiveConversation(ns, name string) *parleyv1alpha1.Conversation {
	return e.ConversationWithSession(ns, name, "")
}

// ConversationWithSession creates a live conversation whose session id is pinned (minted when
// sessionID is empty) and waits until its history is available.
func (e *Env) ConversationWithSession(ns, name, sessionID string) *parleyv1alpha1.Conversation {
	conv := NewConversation(parleyv1alpha1.ConversationSpec{SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "agent " + name}, SessionID: sessionID})
	conv.Namespace, conv.GenerateName, conv.Name = ns, "", name
	gomega.Expect(e.Client.Create(e.Ctx, conv)).To(gomega.Succeed())
	gomega.Eventually(e.HistoryReady(conv)).Should(gomega.Succeed())
	return conv
}

// AgentPodOf creates a pod object (never scheduled here) and records it as conv's agent pod.
func (e *Env) AgentPodOf(conv *parleyv1alpha1.Conversation) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: conv.Namespace, Name: conv.Name + "-agent"},
		Spec:       corev1.PodSpec{ServiceAccountName: "agent", Containers: []corev1.Container{{Name: "agent", Image: "agent:test"}}},
	}
	gomega.Expect(e.Client.Create(e.Ctx, pod)).To(gomega.Succeed())
	e.BindAgentPod(conv, pod)
	return pod
}

// BindAgentPod records pod (its name and UID) as conv's agent pod, as the controller does when
// it creates one, and waits until the Session API's cache sees it.
func (e *Env) BindAgentPod(conv *parleyv1alpha1.Conversation, pod *corev1.Pod) {
	patch := fmt.Appendf(nil, `{"status":{"agent":{"podName":%q,"podUID":%q}}}`, pod.Name, pod.UID)
	gomega.Expect(e.Client.Status().Patch(e.Ctx, conv, client.RawPatch(types.MergePatchType, patch))).To(gomega.Succeed())
	// The Session API checks the pod binding against its cache: wait until it sees the pod.
	gomega.Eventually(func(g gomega.Gomega) {
		seen := &parleyv1alpha1.Conversation{}
		g.Expect(e.SessionReader.Get(e.Ctx, client.ObjectKeyFromObject(conv), seen)).To(gomega.Succeed())
		g.Expect(seen.Status.Agent).NotTo(gomega.BeNil())
		g.Expect(seen.Status.Agent.PodName).To(gomega.Equal(pod.Name))
		g.Expect(seen.Status.Agent.PodUID).To(gomega.Equal(string(pod.UID)))
	}).Should(gomega.Succeed())
}

// Squatter is a pod someone else creates under name before Parley: with the ServiceAccount
// that has the agent role, labelled like an agent pod of conversation, without an owner.
func (e *Env) Squatter(ns, name, conversation string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{agentpod.LabelConversation: conversation}},
		Spec:       corev1.PodSpec{ServiceAccountName: "agent", Containers: []corev1.Container{{Name: "agent", Image: "example.com/attacker:1"}}},
	}
	gomega.Expect(e.Client.Create(e.Ctx, pod)).To(gomega.Succeed())
	return pod
}

// DeleteNow deletes obj without a grace period and waits until it is gone.
func (e *Env) DeleteNow(obj client.Object) {
	gomega.Expect(e.Client.Delete(e.Ctx, obj, client.GracePeriodSeconds(0))).To(gomega.Succeed())
	gomega.Eventually(func() error { return e.Client.Get(e.Ctx, client.ObjectKeyFromObject(obj), obj) }).Should(gomega.Satisfy(apierrors.IsNotFound))
}
