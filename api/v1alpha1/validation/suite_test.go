// Package validation holds the admission specs of the API: the schema, CEL rules and defaults
// that the kubebuilder markers of api/v1alpha1 generate into config/crd, checked by a real
// kube-apiserver (envtest) with those CRDs installed, and config/samples admitted by it. No
// controller runs: what is refused or defaulted here is the apiserver's own doing. They live
// beside the types whose markers they prove, so a marker and its spec change together.
package validation

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/repopath"
)

var (
	ctx       context.Context
	k8sClient client.Client
	repoRoot  string
	stop      func()
)

func TestValidation(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "API admission Suite (envtest)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx = context.Background()
	var err error
	repoRoot, err = repopath.Root()
	Expect(err).NotTo(HaveOccurred())
	cfg, stopEnv, err := kubeenv.StartWithCRDs()
	Expect(err).NotTo(HaveOccurred())
	stop = stopEnv
	cfg.QPS, cfg.Burst = 500, 1000
	k8sClient, _, err = kubeenv.NewClient(cfg)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if stop != nil {
		stop()
	}
})
