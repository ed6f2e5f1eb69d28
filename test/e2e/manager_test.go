//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
	var dyn dynamic.Interface

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
		bin := filepath.Join(GinkgoT().TempDir(), "manager")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/manager")
		build.Dir, build.Stdout, build.Stderr = repoRoot, GinkgoWriter, GinkgoWriter
		Expect(build.Run()).To(Succeed())

		logDir, err := localCluster(ctx, "logs")
		Expect(err).NotTo(HaveOccurred())
		logPath := filepath.Join(logDir, "e2e-manager.log")
		logFile, err := os.Create(logPath)
		Expect(err).NotTo(HaveOccurred())
		// Leader election keeps this manager from fighting one that `make run-local` left running on
		// a cluster the suite reuses (it then waits for the lease); on the suite's own cluster it
		// leads at once.
		// The Session API listens on the pod network's bridge address so agent pods reach it, in
		// plain HTTP (a local run: --session-api-insecure), and agents are told so.
		probe, err := net.Listen("tcp", bridgeAddress+":0")
		Expect(err).NotTo(HaveOccurred())
		apiAddr := probe.Addr().String()
		Expect(probe.Close()).To(Succeed())
		manager := exec.Command(bin, "--leader-elect", "--leader-election-namespace=kube-system",
			"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0",
			"--session-api-bind-address="+apiAddr, "--session-api-insecure", "--agent-api-url=http://"+apiAddr)
		manager.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		manager.Stdout, manager.Stderr = logFile, logFile
		// Dies with the test process, even when `go test` times out and skips the cleanup.
		manager.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		Expect(manager.Start()).To(Succeed())
		GinkgoWriter.Printf("manager pid %d, log %s\n", manager.Process.Pid, logPath)
		exited := make(chan error, 1)
		go func() { exited <- manager.Wait() }()

		DeferCleanup(func() {
			_ = manager.Process.Signal(syscall.SIGTERM)
			var err error
			select {
			case err = <-exited:
			case <-time.After(10 * time.Second):
				_ = manager.Process.Kill()
				err = <-exited
			}
			GinkgoWriter.Printf("manager stopped: %v\n", err)
			_ = logFile.Close()
		})
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

	It("restarts an agent that exits 1 mid-conversation in a new pod with PARLEY_RESUME=true and its bundle, and the agent continues the same sequence", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		By("letting the namespace's default ServiceAccount use the Session API (config/rbac's agent role)")
		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "parley-agent"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"parley.dev"}, Resources: []string{"conversations/history"}, Verbs: []string{"create", "get"}}},
		}
		_, err := clientset.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = clientset.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "parley-agent"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "parley-agent"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("a Conversation whose agent converses four turns and exits 1 in the middle of the third")
		conv := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "parley.dev/v1alpha1",
			"kind":       "Conversation",
			"metadata":   map[string]any{"name": "crashy"},
			"spec": map[string]any{
				"history": map[string]any{"configMap": map[string]any{}},
				"agent": map[string]any{
					"backoff": map[string]any{"initial": "1s", "max": "10s"},
					"template": map[string]any{"spec": map[string]any{
						"terminationGracePeriodSeconds": int64(5),
						"containers": []any{map[string]any{
							"name": "agent", "image": agentImage, "imagePullPolicy": "Never",
							"args": []any{"converse", "-turns", "4", "-crash-at-turn", "3"},
						}},
					}},
				},
			},
		}}
		_, err = dyn.Resource(conversations).Namespace(ns).Create(ctx, conv, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		var got *unstructured.Unstructured
		Eventually(func(g Gomega) {
			got, err = dyn.Resource(conversations).Namespace(ns).Get(ctx, "crashy", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			restarts, _, _ := unstructured.NestedInt64(got.Object, "status", "agent", "restarts")
			g.Expect(restarts).To(Equal(int64(1)))
			g.Expect(agentReason(got)).To(Equal("Completed"))
		}).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).Should(Succeed(),
			func() string { return describePod(ctx, ns, "crashy-agent-2") })

		failure, _, _ := unstructured.NestedMap(got.Object, "status", "agent", "lastFailure")
		Expect(failure).To(HaveKeyWithValue("reason", "Error"))
		Expect(failure).To(HaveKeyWithValue("exitCode", int64(1)))
		Expect(failure).To(HaveKeyWithValue("podName", "crashy-agent-1"))
		Expect(failure).To(HaveKeyWithValue("turn", int64(3)))
		messages, _, _ := unstructured.NestedInt64(got.Object, "status", "history", "messages")
		Expect(messages).To(Equal(int64(8)), "u1 a1 u2 a2 u3 a3 u4 a4: the retried u3 stored once")

		first := podLog(ctx, ns, "crashy-agent-1")
		second := podLog(ctx, ns, "crashy-agent-2")
		Expect(first).To(ContainSubstring("RESUME resume=false attempt=0 checkpoint= bundleMessages=0"))
		Expect(first).To(ContainSubstring("CRASH exit at turn 3"))
		By("the new pod's bundle holds every acknowledged message up to the last complete turn")
		Expect(second).To(ContainSubstring("RESUME resume=true attempt=1 checkpoint=crashy-crash-1 bundleMessages=4 bundleTurns=2 last=a2"))
		By("its appends continue the sequence: u3 is the same message (same id, same sequence), a3 follows it")
		u3 := appendedSeq(first, "u3")
		Expect(appendedSeq(second, "u3")).To(Equal(u3))
		Expect(appendedSeq(second, "a3")).To(Equal(u3 + 1))
		Expect(appendedSeq(second, "a4")).To(Equal(u3 + 3))
	})
})

func agentReason(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "AgentRunning" {
			r, _ := m["reason"].(string)
			return r
		}
	}
	return ""
}

func podLog(ctx context.Context, ns, name string) string {
	b, err := clientset.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred(), "logs of %s/%s", ns, name)
	return string(b)
}

// appendedSeq reads "APPEND <id> seq=N" from the test agent's log.
func appendedSeq(log, id string) int {
	m := regexp.MustCompile(`APPEND ` + regexp.QuoteMeta(id) + ` seq=(\d+)`).FindStringSubmatch(log)
	Expect(m).NotTo(BeNil(), "no append of %s in:\n%s", id, log)
	n, err := strconv.Atoi(m[1])
	Expect(err).NotTo(HaveOccurred())
	return n
}
