// Package clients runs the Session API's clients against one live Session API (the manager on
// envtest with a real S3-compatible server, as internal/sessionapi/envtest runs it): the Go
// client (pkg/client), the Python client (clients/session-api-python), the TypeScript client
// with the OpenAI Agents SDK session and the LangGraph checkpoint saver under the real
// frameworks, and the Claude Agent SDK session store under the real SDK. Each client keeps the
// contract clients/README.md states; the Go client's behaviour against a scripted server
// (retries, paging, errors) is tested without a cluster in pkg/client.
package clients

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/parley-dev/parley/test/support/operatorenv"
)

var env *operatorenv.Env

func TestClients(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "Session API clients Suite (envtest + versitygw)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = operatorenv.Start(operatorenv.Options{})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
