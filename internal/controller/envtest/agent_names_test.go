package envtest

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/operatorenv"
)

// The attacks on the agent binding: whoever may create pods or ConfigMaps in a namespace
// creates one under the predictable name of another Conversation's agent pod or resume
// bundle, and hopes to be taken for it.

// agentConversation creates a Conversation with an agent under a name chosen beforehand.
func agentConversation(ns, name string) *parleyv1alpha1.Conversation {
	conv := newConversation(parleyv1alpha1.ConversationSpec{Agent: agentSpec()})
	conv.Namespace, conv.GenerateName, conv.Name = ns, "", name
	Expect(k8sClient.Create(ctx, conv)).To(Succeed())
	return conv
}

// sessionStatus is the status code of a GET of path on the Session API with token.
func sessionStatus(path, token string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, env.SessionURL+path, http.NoBody)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	return resp.StatusCode
}

var _ = Describe("Agent names someone else took", func() {
	It("neither adopts nor deletes a pod created first under the agent pod's name, and its token gets no access", func() {
		ns := env.AgentNamespace()
		name := "squat-" + randSuffix()
		taken := env.Squatter(ns, agentpod.PodName(name, 1), name)

		conv := agentConversation(ns, name)
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonPodNameTaken)).Should(Succeed())
		Expect(conv.Status.Agent.PodName).To(BeEmpty(), "no binding to the squatted pod")
		Expect(conv.Status.Agent.PodUID).To(BeEmpty())
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElement(parleyv1alpha1.EventAgentNameTaken))

		By("the squatter's token is refused: its pod is not the agent pod")
		Expect(sessionStatus(wire.ConversationPath(ns, name), env.AgentToken(ns, "agent", taken))).To(Equal(http.StatusForbidden))

		By("the squatted pod is left as it was")
		Consistently(func(g Gomega) {
			pod := &corev1.Pod{}
			g.Expect(k8sClient.Get(ctx, clientKey(taken), pod)).To(Succeed())
			g.Expect(pod.UID).To(Equal(taken.UID))
			g.Expect(pod.Annotations).NotTo(HaveKey("parley.dev/stopped-by"))
		}).WithTimeout(2 * operatorenv.NameTakenRetry).Should(Succeed())

		By("once the name is free, Parley creates its own pod and binds it by UID")
		env.DeleteNow(taken)
		own := agentPod(conv, 1)
		Expect(metav1.IsControlledBy(own, conv)).To(BeTrue())
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Agent.PodName).To(Equal(own.Name))
			g.Expect(conv.Status.Agent.PodUID).To(Equal(string(own.UID)))
		}).Should(Succeed())
	})

	It("does not mount a resume bundle ConfigMap someone else created under the bundle's name", func() {
		ns := env.AgentNamespace()
		name := "squat-" + randSuffix()
		planted := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-bundle-1"},
			Data:       map[string]string{"conversation.json": `{"planted":true}`},
		}
		Expect(k8sClient.Create(ctx, planted)).To(Succeed())

		conv := agentConversation(ns, name)
		Eventually(agentCondition(conv, metav1.ConditionFalse, parleyv1alpha1.ReasonBundleNameTaken)).Should(Succeed())
		Consistently(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: agentpod.PodName(name, 1)}, &corev1.Pod{})
		}).WithTimeout(2*operatorenv.NameTakenRetry).Should(Satisfy(apierrors.IsNotFound), "no pod mounts the planted bundle")
		Expect(k8sClient.Get(ctx, clientKey(planted), planted)).To(Succeed(), "the planted ConfigMap is not deleted")

		By("once the name is free, the pod mounts Parley's own bundle")
		env.DeleteNow(planted)
		pod := agentPod(conv, 1)
		Expect(mountedManifest(pod).SessionID).To(Equal(conv.Status.SessionID))
		bundle := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-bundle-1"}, bundle)).To(Succeed())
		Expect(metav1.IsControlledBy(bundle, conv)).To(BeTrue())
	})
})
