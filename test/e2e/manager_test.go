//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/configmap"
)

var conversations = schema.GroupVersionResource{Group: "parley.dev", Version: "v1alpha1", Resource: "conversations"}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// The manager runs as a real process (built from ./cmd/manager) against the local cluster, as
// `make run-local` runs it. Conversations are handled as unstructured objects: the test speaks
// the API's JSON, what users apply, not the Go types.
var _ = Describe("the Parley manager on the local cluster", Ordered, func() {
	var (
		dyn     dynamic.Interface
		manager *managerProcess
	)

	BeforeAll(func(ctx SpecContext) {
		kubeconfig, err := localCluster(ctx, "kubeconfig")
		Expect(err).NotTo(HaveOccurred())

		By("installing the CRDs (kubectl apply -f, client-side)")
		apply := exec.CommandContext(ctx, "kubectl", "apply", "-f", "config/crd/bases")
		apply.Dir, apply.Env = repoRoot, append(os.Environ(), "KUBECONFIG="+kubeconfig)
		apply.Stdout, apply.Stderr = GinkgoWriter, GinkgoWriter
		Expect(apply.Run()).To(Succeed())
		dyn = dynamic.NewForConfigOrDie(restConfig)
		Eventually(func() error {
			_, err := dyn.Resource(conversations).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())

		By("building ./cmd/manager and starting it as a process")
		manager = buildManager(ctx, kubeconfig)
		manager.start()
		// The spec that restarts the manager leaves the new process here: this stops that one.
		DeferCleanup(func() { manager.stop() })
	})

	It("mints a session ID, sets expiresAt from the ttl, and marks the Conversation Expired when it is reached", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		const ttl = 20 * time.Second
		conv := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "parley.dev/v1alpha1",
			"kind":       "Conversation",
			"metadata":   map[string]any{"name": "short-lived"},
			"spec": map[string]any{
				"history":  map[string]any{"configMap": map[string]any{}},
				"lifetime": map[string]any{"ttl": ttl.String()},
			},
		}}
		created, err := dyn.Resource(conversations).Namespace(ns).Create(ctx, conv, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		get := func(ctx context.Context) (*unstructured.Unstructured, error) {
			return dyn.Resource(conversations).Namespace(ns).Get(ctx, "short-lived", metav1.GetOptions{})
		}
		status := func(u *unstructured.Unstructured, field string) string {
			s, _, _ := unstructured.NestedString(u.Object, "status", field)
			return s
		}

		By("waiting for the session ID and expiry time")
		var got *unstructured.Unstructured
		Eventually(func(g Gomega) {
			var err error
			got, err = get(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status(got, "sessionID")).To(MatchRegexp(uuidPattern.String()))
			g.Expect(status(got, "expiresAt")).NotTo(BeEmpty())
			// The session id is recorded first and the history created by the next reconcile,
			// so Active follows the id by one reconcile.
			g.Expect(status(got, "phase")).To(Equal("Active"))
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).Should(Succeed(),
			"is the manager running? see e2e-manager.log in the cluster's log folder")
		expiresAt, err := time.Parse(time.RFC3339, status(got, "expiresAt"))
		Expect(err).NotTo(HaveOccurred())
		Expect(expiresAt).To(BeTemporally("~", created.GetCreationTimestamp().Add(ttl), time.Second))

		By("waiting for the ttl to pass")
		Eventually(func(g Gomega) {
			u, err := get(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status(u, "phase")).To(Equal("Expired"))
		}).WithContext(ctx).WithTimeout(ttl + 2*time.Minute).WithPolling(poll).Should(Succeed())
		Expect(time.Now()).To(BeTemporally(">=", expiresAt), "expired before its time")
	})

	It("garbage-collects a Conversation's history ConfigMaps when the Conversation is deleted", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		conv := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "parley.dev/v1alpha1",
			"kind":       "Conversation",
			"metadata":   map[string]any{"name": "gc-me"},
			"spec":       map[string]any{"history": map[string]any{"configMap": map[string]any{}}},
		}}
		created, err := dyn.Resource(conversations).Namespace(ns).Create(ctx, conv, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("writing a history owned by the Conversation, past one seal")
		c, err := client.New(restConfig, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		store, err := configmap.New(configmap.Config{Client: c, Namespace: ns})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = store.Close() })
		h, err := store.Open(ctx, "gc-me", history.OpenOptions{Create: true, Owner: &metav1.OwnerReference{
			APIVersion: "parley.dev/v1alpha1", Kind: "Conversation", Name: "gc-me", UID: created.GetUID(),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}})
		Expect(err).NotTo(HaveOccurred())
		for i := range 40 {
			_, err := h.Append(ctx, []history.Record{{ID: fmt.Sprintf("m%d", i), Data: []byte(`{"role":"user"}`)}})
			Expect(err).NotTo(HaveOccurred())
		}
		historyObjects := func(ctx context.Context) (int, error) {
			list := &corev1.ConfigMapList{}
			err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{configmap.LabelConversation: "gc-me"})
			return len(list.Items), err
		}
		Expect(historyObjects(ctx)).To(BeNumerically(">=", 2), "an index and at least one segment or tail")

		By("deleting the Conversation: kube-controller-manager's garbage collector removes the history")
		Expect(dyn.Resource(conversations).Namespace(ns).Delete(ctx, "gc-me", metav1.DeleteOptions{})).To(Succeed())
		Eventually(historyObjects).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(BeZero())
	})

	agentRecoverySpecs(func() dynamic.Interface { return dyn }, func() *managerProcess { return manager })
	checkpointQuotaSpecs(func() dynamic.Interface { return dyn })
	realAgentSpecs(func() dynamic.Interface { return dyn }, func() *managerProcess { return manager })
	idleAgentSpecs(func() dynamic.Interface { return dyn }, func() *managerProcess { return manager })
	idleWakeBench(func() dynamic.Interface { return dyn }, func() *managerProcess { return manager })
})
