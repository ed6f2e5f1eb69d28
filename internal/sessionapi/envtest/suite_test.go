// Package envtest runs the Session API against a real kube-apiserver and etcd (envtest), a
// real S3-compatible server (versitygw) and the manager that serves it in production: token
// and access reviews, pod binding, idempotent appends, problem+json answers, transcripts,
// reset and the status an append feeds are the servers' own. Its handlers' pure parts are
// tested without either in package sessionapi; the clients' suites are in test/clients.
package envtest

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/parley-dev/parley/test/support/operatorenv"
)

var (
	env *operatorenv.Env
	// The parts of env the specs use.
	ctx        context.Context
	k8sClient  client.Client
	sessionURL string
)

func TestSessionAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "Session API Suite (envtest + versitygw)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = operatorenv.Start(operatorenv.Options{})
	Expect(err).NotTo(HaveOccurred())
	ctx, k8sClient, sessionURL = env.Ctx, env.Client, env.SessionURL
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
