//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

const (
	installNamespace  = "parley-system"
	installDeployment = "parley-controller-manager"
	// installedImage is the image dist/install.yaml names (DEFAULT_IMG of the Makefile) as the
	// kubelet resolves it: a name without a registry is Docker Hub's library.
	installedImage = "docker.io/library/parley-manager:dev"
	// localManagerImage is the manager image as hack/images.sh names it.
	localManagerImage = "localhost/parley-manager:dev"
	// rolloutTimeout covers two manager pods starting on a busy 2-core machine: image already
	// local, then leader election and informer caches before /readyz answers.
	rolloutTimeout = 3 * time.Minute
)

// kubectl runs kubectl against the local cluster from the repository root, with stdin, and
// returns its combined output.
func kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	return onCluster(ctx, stdin, "kubectl", args...)
}

// onCluster runs a client program (kubectl, helm) against the local cluster from the
// repository root, with stdin, and returns its combined output.
func onCluster(ctx context.Context, stdin, program string, args ...string) (string, error) {
	kubeconfig, err := localCluster(ctx, "kubeconfig")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	_, _ = GinkgoWriter.Write(out.Bytes())
	return out.String(), err
}

// The installer as a user runs it: `kubectl apply -f dist/install.yaml`, client-side, the
// committed file unchanged.
var _ = Describe("dist/install.yaml on the local cluster", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		prepareManagerInstall(ctx)
		DeferCleanup(func(ctx SpecContext) {
			// A spec that failed before the uninstall spec leaves the install: no manager of ours
			// may compete with the next spec's.
			out, err := kubectl(ctx, "", kubectlUninstall...)
			Expect(err).NotTo(HaveOccurred(), out)
		}, NodeTimeout(3*time.Minute))
	})

	It("applies client-side, and the manager's two replicas become Ready with one leader", func(ctx SpecContext) {
		out, err := kubectl(ctx, "", "apply", "-f", "dist/install.yaml")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("customresourcedefinition.apiextensions.k8s.io/conversations.parley.dev"))
		Expect(out).To(ContainSubstring("deployment.apps/" + installDeployment))

		expectManagerReplicasReady(ctx)
	})

	installedManagerSpecs()

	It("is removed by the documented uninstall but for the CRDs", func(ctx SpecContext) {
		out, err := kubectl(ctx, "", kubectlUninstall...)
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = kubectl(ctx, "", "get", "-f", "dist/install.yaml", "--ignore-not-found", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(strings.Fields(out)).To(ConsistOf(
			"customresourcedefinition.apiextensions.k8s.io/checkpoints.parley.dev",
			"customresourcedefinition.apiextensions.k8s.io/conversations.parley.dev"),
			"left behind, a cluster-scoped object makes a later helm install refuse to take it over")
	})
})

// kubectlUninstall is docs/install.md's removal of a kubectl install: everything the file
// makes but the CRDs (they carry no app.kubernetes.io/name label), so Conversations of other
// specs or of `make run-local` survive.
var kubectlUninstall = []string{"delete", "-f", "dist/install.yaml", "-l", "app.kubernetes.io/name=parley", "--ignore-not-found", "--wait=true"}

// managerImageImported is set once the manager image is in the node's containerd under both
// names the install specs use: one build and import serves every install of the run.
var managerImageImported bool

// prepareManagerInstall readies the local cluster for an installed manager: the image built
// here (hack/images.sh) and given the name dist/install.yaml uses, since nothing can be pulled,
// and no endpoint of a host-run manager left in the install's namespace.
func prepareManagerInstall(ctx context.Context) {
	if !managerImageImported {
		By("building the manager image and naming it " + installedImage)
		images := exec.CommandContext(ctx, filepath.Join(repoRoot, "hack", "images.sh"), "manager")
		images.Dir, images.Stdout, images.Stderr = repoRoot, GinkgoWriter, GinkgoWriter
		Expect(images.Run()).To(Succeed())
		// Imported here as well: images.sh skips the import, and says so only in its log, when
		// it finds no containerd, and an image of an earlier run would then be tagged instead.
		_, err := localCluster(ctx, "ctr", "images", "import", filepath.Join(repoRoot, "bin", "images", "parley-manager.tar"))
		Expect(err).NotTo(HaveOccurred())
		_, err = localCluster(ctx, "ctr", "images", "tag", "--force", localManagerImage, installedImage)
		Expect(err).NotTo(HaveOccurred())
		managerImageImported = true
	}
	// make run-local (a host-run manager) applies some of the install's objects itself: the
	// APIService, the Session API Service with an endpoint naming this host, the agent
	// ClusterRole. Helm refuses to take over objects it did not make, and the aggregator would
	// pick the host's endpoint beside the installed pods'; the uninstall removes them all (the
	// namespace with the endpoint), as docs/development.md tells a user to.
	By("removing what an earlier install or make run-local left (the documented kubectl uninstall)")
	out, err := kubectl(ctx, "", kubectlUninstall...)
	Expect(err).NotTo(HaveOccurred(), out)
}

// expectManagerReplicasReady waits for the installed Deployment's two replicas to be Ready and
// for one of them to hold the leader-election Lease.
func expectManagerReplicasReady(ctx context.Context) {
	By("waiting for both replicas to be Ready (readiness probe /readyz)")
	Eventually(func(g Gomega) {
		d, err := clientset.AppsV1().Deployments(installNamespace).Get(ctx, installDeployment, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.UpdatedReplicas).To(BeEquivalentTo(2))
		g.Expect(d.Status.ReadyReplicas).To(BeEquivalentTo(2))
		g.Expect(d.Status.Conditions).To(ContainElement(SatisfyAll(
			HaveField("Type", appsv1.DeploymentAvailable), HaveField("Status", BeEquivalentTo("True")))))
	}).WithContext(ctx).WithTimeout(rolloutTimeout).WithPolling(time.Second).Should(Succeed(),
		func() string { return keepFailure(ctx, "install-rollout", managerPodsReport(ctx)) })

	By("checking one of the pods holds the leader-election Lease")
	pods, err := clientset.CoreV1().Pods(installNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "control-plane=controller-manager",
	})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		lease, err := clientset.CoordinationV1().Leases(installNamespace).Get(ctx, "manager.parley.dev", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		holder := *lease.Spec.HolderIdentity
		names := make([]string, 0, len(pods.Items))
		for _, p := range pods.Items {
			names = append(names, p.Name)
			if strings.HasPrefix(holder, p.Name+"_") {
				return
			}
		}
		g.Expect(names).To(ContainElement(holder), "the Lease holder is none of the installed pods")
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
}

// installedManagerSpecs are what a user does with an installed manager, whichever installer
// made it: admission of Conversations, and conversations through the API server's aggregator.
// They run in an install's Ordered container, after the manager's replicas are Ready.
func installedManagerSpecs() {
	It("refuses a Conversation with an invalid pod template at admission, and the installed manager takes a valid one", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		conv := func(container string) string {
			return `apiVersion: parley.dev/v1alpha1
kind: Conversation
metadata: {name: installed, namespace: ` + ns + `}
spec:
  history: {configMap: {}}
  agent:
    template:
      spec:
        containers:
        - ` + container + "\n"
		}

		By("a container without a name")
		out, err := kubectl(ctx, conv("{image: agent:1}"), "apply", "-f", "-")
		Expect(err).To(HaveOccurred(), "kubectl apply accepted a container without a name")
		Expect(out).To(ContainSubstring(`The Conversation "installed" is invalid`))
		Expect(out).To(ContainSubstring("spec.agent.template.spec.containers[0].name: Required value"))

		By("a containerPort that is a string")
		out, err = kubectl(ctx, conv("{name: agent, image: agent:1, ports: [{containerPort: http}]}"), "apply", "-f", "-")
		Expect(err).To(HaveOccurred(), "kubectl apply accepted a string containerPort")
		Expect(out).To(ContainSubstring("spec.agent.template.spec.containers[0].ports[0].containerPort"))
		Expect(out).To(ContainSubstring("must be of type integer"))

		By("a valid one: accepted, and the installed manager mints its session id")
		out, err = kubectl(ctx, conv("{name: agent, image: "+agentImage+", imagePullPolicy: Never, args: [serve]}"), "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), out)
		dyn := dynamic.NewForConfigOrDie(restConfig)
		Eventually(func(g Gomega) {
			u, err := dyn.Resource(conversations).Namespace(ns).Get(ctx, "installed", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			id, _, _ := unstructured.NestedString(u.Object, "status", "sessionID")
			g.Expect(id).To(MatchRegexp(uuidPattern.String()))
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).Should(Succeed(),
			"kubectl -n "+installNamespace+" logs deploy/"+installDeployment)
	})

	aggregatedPathSpecs()
}
