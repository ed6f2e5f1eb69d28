//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

const (
	// helmRelease is the release name docs/install.md installs the chart as.
	helmRelease = "parley"
	// helmValues are a user's values for the chart: the manager image already on the node.
	helmValues = "test/e2e/testdata/helm-values.yaml"
	// helmClusterKinds are the cluster-scoped kinds an install could leave behind to break the
	// next one: an APIService claiming the aggregated group, admission policies and webhooks,
	// roles.
	helmClusterKinds = "apiservices,validatingadmissionpolicies,validatingadmissionpolicybindings," +
		"validatingwebhookconfigurations,mutatingwebhookconfigurations,clusterroles,clusterrolebindings"
)

// helm runs the helm of `make helm` (or $HELM) against the local cluster.
func helm(ctx context.Context, args ...string) (string, error) {
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = filepath.Join("bin", "helm")
	}
	if !filepath.IsAbs(bin) && strings.Contains(bin, "/") {
		bin = filepath.Join(repoRoot, bin) // relative to the repository, as make sees it
	}
	if _, err := os.Stat(bin); err != nil {
		Fail("no helm at " + bin + ": run `make helm`, or set HELM")
	}
	return onCluster(ctx, "", bin, args...)
}

// The chart as a user installs it: `helm install` of dist/chart into a namespace they made and
// labelled, with their image values. The same specs as the kubectl install then run against
// the chart's manager on the real node, and `helm uninstall` must leave nothing of the release.
var _ = Describe("dist/chart installed with helm on the local cluster", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		prepareManagerInstall(ctx)
		By("making the release namespace " + installNamespace + ", labelled for the restricted Pod Security Standard")
		out, err := kubectl(ctx, `apiVersion: v1
kind: Namespace
metadata:
  name: `+installNamespace+`
  labels: {pod-security.kubernetes.io/enforce: restricted}
`, "apply", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), out)
		DeferCleanup(func(ctx SpecContext) {
			out, err := kubectl(ctx, "", "delete", "namespace", installNamespace, "--ignore-not-found", "--wait=true")
			Expect(err).NotTo(HaveOccurred(), out)
		}, NodeTimeout(3*time.Minute))
		DeferCleanup(func(ctx SpecContext) {
			// A spec that failed before the uninstall spec leaves the release: no manager of
			// ours may compete with the next spec's.
			out, err := helm(ctx, "uninstall", helmRelease, "--namespace", installNamespace, "--ignore-not-found", "--wait")
			Expect(err).NotTo(HaveOccurred(), out)
		}, NodeTimeout(3*time.Minute))
	})

	It("installs with the user's image values, and the manager's two replicas become Ready with one leader", func(ctx SpecContext) {
		out, err := helm(ctx, "install", helmRelease, "dist/chart", "--namespace", installNamespace, "--values", helmValues)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("STATUS: deployed"))

		d, err := clientset.AppsV1().Deployments(installNamespace).Get(ctx, installDeployment, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Spec.Template.Spec.Containers).To(ConsistOf(SatisfyAll(
			HaveField("Image", localManagerImage), HaveField("ImagePullPolicy", BeEquivalentTo("Never")))),
			"the values' image runs, not the chart's default")

		expectManagerReplicasReady(ctx)
	})

	installedManagerSpecs()

	It("helm uninstall removes every object of the release but the CRDs, so the next install starts clean", func(ctx SpecContext) {
		manifest, err := helm(ctx, "get", "manifest", helmRelease, "--namespace", installNamespace)
		Expect(err).NotTo(HaveOccurred(), manifest)
		Expect(manifest).To(SatisfyAll(ContainSubstring("kind: APIService"), ContainSubstring("kind: ClusterRole"),
			ContainSubstring("kind: ValidatingAdmissionPolicy")))

		out, err := helm(ctx, "uninstall", helmRelease, "--namespace", installNamespace, "--wait")
		Expect(err).NotTo(HaveOccurred(), out)

		By("no object of the release's manifest is left")
		out, err = kubectl(ctx, manifest, "get", "-f", "-", "--ignore-not-found", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(strings.TrimSpace(out)).To(BeEmpty())

		By("no APIService claims " + installedAPIService + ", and no cluster-scoped object the chart labels is left")
		_, err = dynamic.NewForConfigOrDie(restConfig).Resource(apiServices).Get(ctx, installedAPIService, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "APIService %s: %v", installedAPIService, err)
		out, err = kubectl(ctx, "", "get", helmClusterKinds, "-l", "app.kubernetes.io/managed-by=Helm,app.kubernetes.io/name=parley", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(strings.TrimSpace(out)).To(Or(BeEmpty(), Equal("No resources found")))

		By("the CRDs stay, with the Conversations a user kept")
		resources, err := clientset.Discovery().ServerResourcesForGroupVersion("parley.dev/v1alpha1")
		Expect(err).NotTo(HaveOccurred())
		Expect(resources.APIResources).To(ContainElement(HaveField("Name", "conversations")))
	})
})
