//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/parley-dev/parley/pkg/wire"
)

const (
	// installedAPIService registers the aggregated group session.parley.dev (dist/install.yaml,
	// dist/chart).
	installedAPIService = "v1alpha1.session.parley.dev"
	// installedSessionAPIHost is the installed Session API Service's name, which its serving
	// certificate is valid for and which the test agent is told to call (PARLEY_API_URL).
	installedSessionAPIHost = "parley-session-api." + installNamespace + ".svc"
	// installedViewerRole is config/rbac's conversation viewer role as dist/install.yaml names it.
	installedViewerRole = "parley-conversation-viewer-role"
)

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// aggregatedPathSpecs run kubectl parley and kubectl get --raw through the API server's
// aggregator against the installed manager, as people with client-certificate kubeconfigs
// (minted for new users through a CertificateSigningRequest, as a cluster admin does). The
// conversation is the test agent's, on the real node. They run in an install's Ordered
// container, after the manager's replicas are Ready.
func aggregatedPathSpecs() {
	It("serves kubectl parley and kubectl get --raw through the API server to a client-certificate user, and refuses one without conversations/history", func(ctx SpecContext) {
		By("waiting for the aggregator to find the APIService " + installedAPIService + " Available")
		dyn := dynamic.NewForConfigOrDie(restConfig)
		Eventually(func(g Gomega) {
			u, err := dyn.Resource(apiServices).Get(ctx, installedAPIService, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(apiServiceAvailable(u)).To(BeTrue(), "status: %v", u.Object["status"])
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		ns := newNamespace(ctx)
		grantAgentRole(ctx, ns)
		By("a Conversation whose test agent converses two turns through the installed Session API")
		conv := agentConversation("chat", "1s", agentContainer("converse", "-turns", "2"))
		// No kube-proxy or cluster DNS on the local cluster: the agent resolves the Service's name
		// to a manager pod (every replica serves the Session API) and verifies its certificate
		// for that name, as it would through the Service.
		Expect(unstructured.SetNestedSlice(conv.Object, []any{map[string]any{
			"ip": managerPodIP(ctx), "hostnames": []any{installedSessionAPIHost},
		}}, "spec", "agent", "template", "spec", "hostAliases")).To(Succeed())
		_, err := dyn.Resource(conversations).Namespace(ns).Create(ctx, conv, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		got := waitAgentCompleted(ctx, dyn.Resource(conversations).Namespace(ns), ns, "chat", 0, podTimeout)
		Expect(historyMessages(got)).To(Equal(int64(4)), "u1 a1 u2 a2")
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		Expect(phase).To(Equal("Active"))

		plugin := buildPlugin(ctx)
		viewer := certificateKubeconfig(ctx, "viewer-"+ns)
		bindClusterRole(ctx, ns, "viewer-"+ns, installedViewerRole)
		kp := func(kubeconfig string, args ...string) (string, error) {
			return run(ctx, plugin, append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)...)
		}

		By("kubectl parley history with the viewer's client certificate")
		out, err := kp(viewer, "history", "chat")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(SatisfyAll(ContainSubstring("question 1"), ContainSubstring("answer 2")))

		By("kubectl parley export -o claude")
		dir := GinkgoT().TempDir()
		out, err = kp(viewer, "export", "chat", "-o", "claude", "--dir", dir, "--cwd", "/work")
		Expect(err).NotTo(HaveOccurred(), out)
		files, _ := filepath.Glob(filepath.Join(dir, "projects", "*", "*.jsonl"))
		Expect(files).To(HaveLen(1))
		transcript, err := os.ReadFile(files[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(string(transcript)).To(ContainSubstring("answer 2"))

		By("kubectl get --raw of the conversation's messages")
		raw := wire.AggregatedPath + wire.ConversationSubpath(ns, "chat") + "/messages"
		out, err = run(ctx, "kubectl", "--kubeconfig", viewer, "get", "--raw", raw)
		Expect(err).NotTo(HaveOccurred(), out)
		var page wire.MessagesPage
		Expect(json.Unmarshal([]byte(out), &page)).To(Succeed(), out)
		Expect(page.Messages).To(HaveLen(4))

		By("kubectl parley tail -f: a message appended while it follows arrives")
		follow := exec.CommandContext(ctx, plugin, "--kubeconfig", viewer, "-n", ns, "tail", "-f", "chat")
		var followed lockedBuffer
		follow.Stdout, follow.Stderr = &followed, &followed
		Expect(follow.Start()).To(Succeed())
		DeferCleanup(func() { _ = follow.Process.Kill(); _ = follow.Wait() })
		Eventually(followed.String).WithTimeout(30 * time.Second).WithPolling(poll).Should(ContainSubstring("answer 2"))
		admin, err := localCluster(ctx, "kubeconfig")
		Expect(err).NotTo(HaveOccurred())
		out, err = kp(admin, "send", "chat", "and through the aggregator?")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(followed.String).WithTimeout(30*time.Second).WithPolling(poll).Should(ContainSubstring("and through the aggregator?"),
			"tail -f printed:\n%s", followed.String)

		By("a user the API server lets through but who lacks conversations/history get: the Session API's 403 as problem+json")
		stranger := certificateKubeconfig(ctx, "stranger-"+ns)
		grantAggregatedReadsOnly(ctx, ns, "stranger-"+ns)
		resp, body := getAs(ctx, stranger, raw)
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden), string(body))
		Expect(resp.Header.Get("Content-Type")).To(Equal(wire.ProblemContentType))
		var problem wire.Problem
		Expect(json.Unmarshal(body, &problem)).To(Succeed(), string(body))
		Expect(problem.Type).To(Equal(wire.ProblemForbidden))
		out, err = kp(stranger, "history", "chat")
		Expect(err).To(HaveOccurred(), "history for a user without conversations/history:\n%s", out)
	})
}

func apiServiceAvailable(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Available" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// managerPodIP is the address of a Ready installed manager replica.
func managerPodIP(ctx context.Context) string {
	pods, err := clientset.CoreV1().Pods(installNamespace).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
	Expect(err).NotTo(HaveOccurred())
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.Status.PodIP != "" {
				return p.Status.PodIP
			}
		}
	}
	Fail("no Ready manager pod in " + installNamespace)
	return ""
}

// buildPlugin builds ./cmd/kubectl-parley into a temporary folder.
func buildPlugin(ctx context.Context) string {
	bin := filepath.Join(GinkgoT().TempDir(), "kubectl-parley")
	out, err := run(ctx, "go", "build", "-o", bin, "./cmd/kubectl-parley")
	Expect(err).NotTo(HaveOccurred(), out)
	return bin
}

// run runs a program from the repository root and returns its combined output.
func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = repoRoot
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	_, _ = GinkgoWriter.Write(out.Bytes())
	return out.String(), err
}

// certificateKubeconfig is a kubeconfig for a new user authenticated by a client certificate
// the cluster signs: a CertificateSigningRequest for kube-apiserver clients, approved.
func certificateKubeconfig(ctx context.Context, user string) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: user, Organization: []string{"people"}},
	}, key)
	Expect(err).NotTo(HaveOccurred())
	csrs := clientset.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}),
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			ExpirationSeconds: ptr.To[int32](3600),
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) { _ = csrs.Delete(ctx, user, metav1.DeleteOptions{}) })
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "E2E", Message: "a test user",
	})
	_, err = csrs.UpdateApproval(ctx, user, csr, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	var certPEM []byte
	Eventually(func(g Gomega) {
		got, err := csrs.Get(ctx, user, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		certPEM = got.Status.Certificate
		g.Expect(certPEM).NotTo(BeEmpty())
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed(), "kube-controller-manager signs approved CSRs")

	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: restConfig.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM, ClientKeyData: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = "local"
	path := filepath.Join(GinkgoT().TempDir(), user+".kubeconfig")
	Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	return path
}

// bindClusterRole binds the ClusterRole role to user in ns.
func bindClusterRole(ctx context.Context, ns, user, role string) {
	_, err := clientset.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// grantAggregatedReadsOnly lets user read conversations through the aggregated group, which
// the API server checks before it proxies, without conversations/history get, which the
// Session API checks.
func grantAggregatedReadsOnly(ctx context.Context, ns, user string) {
	_, err := clientset.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{wire.AggregatedGroup}, Verbs: []string{"get", "list"},
			Resources: []string{"conversations", "conversations/messages", "conversations/log"},
		}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = clientset.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// getAs GETs an API server path with kubeconfig's credentials and returns the response and its
// body.
func getAs(ctx context.Context, kubeconfig, path string) (*http.Response, []byte) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	hc, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(cfg.Host, "/")+path, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := hc.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp, body
}

// lockedBuffer is a buffer a running command writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
