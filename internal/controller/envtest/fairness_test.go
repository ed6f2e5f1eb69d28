package envtest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/controller"
)

// otherNamespaceBar is how long a Conversation of another namespace may wait for its history
// while one namespace's histories stall: far under the S3 client's response-header timeout,
// which is how long a worker would wait on each stalled read.
const otherNamespaceBar = 10 * time.Second

// tarpit is an S3 endpoint that answers nothing until released: each request it holds would
// hold the worker that sent it.
type tarpit struct {
	*httptest.Server
	release  chan struct{}
	once     sync.Once
	inFlight atomic.Int64
}

func newTarpit() *tarpit {
	t := &tarpit{release: make(chan struct{})}
	t.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.inFlight.Add(1)
		defer t.inFlight.Add(-1)
		select {
		case <-t.release:
		case <-r.Context().Done():
		}
		http.Error(w, "released", http.StatusServiceUnavailable)
	}))
	return t
}

// stop lets every held request go and closes the server.
func (t *tarpit) stop() {
	t.once.Do(func() { close(t.release) })
	t.Close()
}

var _ = Describe("A namespace whose S3 endpoint stalls", func() {
	It("holds at most its share of the workers: another namespace's Conversation is reconciled meanwhile", func() {
		pit := newTarpit()
		DeferCleanup(pit.stop)

		stalled := env.AgentNamespace()
		Expect(k8sClient.Create(ctx, s3Secret(stalled, "s3"))).To(Succeed())
		const stalledConvs = 8 // twice the suite's workers
		convs := make([]*parleyv1alpha1.Conversation, 0, stalledConvs)
		for range stalledConvs {
			conv := newConversation(parleyv1alpha1.ConversationSpec{
				History: parleyv1alpha1.HistorySpec{ObjectStore: &parleyv1alpha1.ObjectStoreHistory{
					Endpoint: pit.URL, Bucket: testBucket, Prefix: "tarpit-" + randSuffix(), ForcePathStyle: true, Insecure: true,
					CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: "s3"},
				}},
			})
			conv.Namespace = stalled
			// Nothing to clean up at the tarpit when the spec deletes them.
			conv.Annotations = map[string]string{controller.AnnotationSkipHistoryCleanup: "true"}
			Expect(k8sClient.Create(ctx, conv)).To(Succeed())
			convs = append(convs, conv)
		}
		DeferCleanup(func() {
			for _, c := range convs {
				Expect(k8sClient.Delete(ctx, c)).To(Succeed())
			}
		})
		Eventually(pit.inFlight.Load).Should(BeNumerically(">=", 1), "the stalled namespace's reads reach the tarpit")

		By("a Conversation of another namespace gets its history while the tarpit holds its reads")
		other := newConversation(parleyv1alpha1.ConversationSpec{})
		other.Namespace = env.AgentNamespace()
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(historyReady(other)).WithTimeout(otherNamespaceBar).Should(Succeed())

		By("the stalled namespace's other reads are put off with HistoryReadDeferred, not held")
		Expect(pit.inFlight.Load()).To(BeNumerically("<", 4), "reads held at the tarpit")
		Eventually(func(g Gomega) {
			deferred := 0
			for _, c := range convs {
				for _, r := range eventReasons(c) {
					if r == parleyv1alpha1.EventHistoryReadDeferred {
						deferred++
						break
					}
				}
			}
			g.Expect(deferred).To(BeNumerically(">", 0))
		}).Should(Succeed())
	})
})
