//go:build e2e

// Package e2e holds the end-to-end tests: they run against the local cluster of
// hack/local-cluster (a real control plane and a real kubelet + containerd node) with images
// built on this machine by hack/images.sh. Run them with `make test-e2e` (as root).
//
// Cluster lifecycle: when no local cluster is up, the suite starts one and stops it at the end
// (`hack/local-cluster down`), leaving no process behind; set PARLEY_E2E_KEEP_CLUSTER=1 to keep
// it running for debugging. When a cluster is already up, the suite uses it and leaves it
// running: it did not start it, so it is not its to stop.
package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	agentImage = "localhost/parley-test-agent:dev"
	// podTimeout bounds how long a pod may take to reach the state a spec waits for. Pods start
	// in 2–3 s on an idle machine; the margin is for a busy 2-core CI box.
	podTimeout = 3 * time.Minute
	poll       = 250 * time.Millisecond
	// bridgeAddress is the host's address on the local node's pod network: a process on the
	// host listening there is reachable from pods (a host-run Session API).
	bridgeAddress = "10.88.0.1"
)

var (
	repoRoot       string
	restConfig     *rest.Config
	clientset      *kubernetes.Clientset
	nodeName       string
	startedCluster bool
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Parley e2e (local cluster)")
}

// localCluster runs hack/local-cluster with the given arguments, streaming its output to the
// Ginkgo writer, and returns its standard output.
func localCluster(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "hack", "local-cluster"), args...)
	cmd.Dir = repoRoot
	cmd.Stderr = GinkgoWriter
	out, err := cmd.Output()
	_, _ = GinkgoWriter.Write(out)
	return strings.TrimSpace(string(out)), err
}

var _ = BeforeSuite(func(ctx SpecContext) {
	wd, err := os.Getwd()
	Expect(err).NotTo(HaveOccurred())
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))

	if _, err := localCluster(ctx, "status"); err == nil {
		By("using the local cluster that is already up (it will be left running)")
	} else {
		By("starting the local cluster (hack/local-cluster up)")
		startedCluster = true
		_, err := localCluster(ctx, "up")
		Expect(err).NotTo(HaveOccurred(), "hack/local-cluster up failed; see its logs under the cluster folder")
	}

	By("building and importing the test-agent image (hack/images.sh agent)")
	images := exec.CommandContext(ctx, filepath.Join(repoRoot, "hack", "images.sh"), "agent")
	images.Dir = repoRoot
	images.Stdout, images.Stderr = GinkgoWriter, GinkgoWriter
	Expect(images.Run()).To(Succeed())

	kubeconfig, err := localCluster(ctx, "kubeconfig")
	Expect(err).NotTo(HaveOccurred())
	restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(restConfig)
	Expect(err).NotTo(HaveOccurred())

	host, err := os.Hostname()
	Expect(err).NotTo(HaveOccurred())
	nodeName = strings.ToLower(host)

	By("checking the real node " + nodeName + " is Ready")
	Eventually(func(g Gomega) {
		node, err := clientset.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(node.Status.Conditions).To(ContainElement(SatisfyAll(
			HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).Should(Succeed(),
		"the e2e specs need the real node; a cluster started with PARLEY_CLUSTER_NODE=0 has none")
}, NodeTimeout(30*time.Minute))

var _ = AfterSuite(func(ctx SpecContext) {
	if !startedCluster {
		return
	}
	if os.Getenv("PARLEY_E2E_KEEP_CLUSTER") == "1" {
		By("PARLEY_E2E_KEEP_CLUSTER=1: leaving the local cluster running (make cluster-down stops it)")
		return
	}
	By("stopping the local cluster (hack/local-cluster down)")
	_, err := localCluster(ctx, "down")
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(5*time.Minute))
