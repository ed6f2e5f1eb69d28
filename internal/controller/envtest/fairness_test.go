package envtest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/controller"
)

// otherNamespaceBar is how long a Conversation of another namespace may wait for its history
// while one namespace's histories stall: far under the S3 client's response-header timeout,
// which is how long a worker would wait on each stalled read.
const otherNamespaceBar = 10 * time.Second

// tarpit is an S3 endpoint that answers nothing until released: each request it holds would
// hold the worker that sent it. One made by newStallingProxy passes requests on to the suite's
// S3 server until it is told to stall.
type tarpit struct {
	*httptest.Server
	release  chan struct{}
	once     sync.Once
	inFlight atomic.Int64
	stalling atomic.Bool
}

func newTarpit() *tarpit {
	t := newStallingProxy()
	t.stall()
	return t
}

// newStallingProxy is a tarpit that serves through the suite's S3 server until stall.
func newStallingProxy() *tarpit {
	t := &tarpit{release: make(chan struct{})}
	upstream := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: s3srv.Endpoint})
	t.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !t.stalling.Load() {
			upstream.ServeHTTP(w, r)
			return
		}
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

// stall holds every request from now on.
func (t *tarpit) stall() { t.stalling.Store(true) }

// conversation creates a Conversation of namespace (with the suite's S3 credentials in Secret
// s3) whose history is at t, deleted when the spec ends.
func (t *tarpit) conversation(namespace string) *parleyv1alpha1.Conversation {
	conv := newConversation(parleyv1alpha1.ConversationSpec{
		History: parleyv1alpha1.HistorySpec{ObjectStore: &parleyv1alpha1.ObjectStoreHistory{
			Endpoint: t.URL, Bucket: testBucket, Prefix: "tarpit-" + randSuffix(), ForcePathStyle: true, Insecure: true,
			CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: "s3"},
		}},
	})
	conv.Namespace = namespace
	// Nothing to clean up at the tarpit when the spec deletes it.
	conv.Annotations = map[string]string{controller.AnnotationSkipHistoryCleanup: "true"}
	Expect(k8sClient.Create(ctx, conv)).To(Succeed())
	DeferCleanup(func() { Expect(k8sClient.Delete(ctx, conv)).To(Succeed()) })
	return conv
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
			convs = append(convs, pit.conversation(stalled))
		}
		Eventually(pit.inFlight.Load).Should(BeNumerically(">=", 1), "the stalled namespace's reads reach the tarpit")

		By("a Conversation of another namespace gets its history while the tarpit holds its reads")
		other := newConversation(parleyv1alpha1.ConversationSpec{})
		other.Namespace = env.AgentNamespace()
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(historyReady(other)).WithTimeout(otherNamespaceBar).Should(Succeed())

		By("the stalled namespace's other reads are put off with HistoryReadDeferred, not held")
		Expect(pit.inFlight.Load()).To(BeNumerically("<", 4), "reads held at the tarpit")
		Eventually(func() int { return withEvent(convs, parleyv1alpha1.EventHistoryReadDeferred) }).Should(BeNumerically(">", 0))
	})
})

var _ = Describe("Checkpoints of a namespace whose S3 endpoint stalls", func() {
	It("hold at most its share of the Checkpoint workers: another namespace's Checkpoint becomes Ready meanwhile", func() {
		proxy := newStallingProxy()
		DeferCleanup(proxy.stop)

		stalled := env.AgentNamespace()
		Expect(k8sClient.Create(ctx, s3Secret(stalled, "s3"))).To(Succeed())
		conv := proxy.conversation(stalled)
		Eventually(historyReady(conv)).Should(Succeed())

		By("the endpoint stalls once the history is there; Manual Checkpoints of it are created")
		proxy.stall()
		const stalledCheckpoints = 8 // twice the suite's workers
		ckpts := make([]*parleyv1alpha1.Checkpoint, 0, stalledCheckpoints)
		for range stalledCheckpoints {
			c := manualCheckpoint(conv)
			Expect(k8sClient.Create(ctx, c)).To(Succeed())
			ckpts = append(ckpts, c)
		}
		Eventually(proxy.inFlight.Load).Should(BeNumerically(">=", 1), "the stalled namespace's snapshots reach the endpoint")

		By("a Checkpoint of another namespace is Ready while the endpoint holds the snapshots")
		other := newConversation(parleyv1alpha1.ConversationSpec{})
		other.Namespace = env.AgentNamespace()
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(historyReady(other)).Should(Succeed())
		ckpt := manualCheckpoint(other)
		Expect(k8sClient.Create(ctx, ckpt)).To(Succeed())
		Eventually(checkpointReady(ckpt)).WithTimeout(otherNamespaceBar).Should(Succeed())

		By("the stalled namespace holds one slot, the Conversation's and the Checkpoints' together; its other snapshots are put off")
		Expect(proxy.inFlight.Load()).To(BeNumerically("<=", controller.HistoryIOPerNamespace(4, 0)), "requests held at the endpoint")
		Eventually(func() int { return withEvent(ckpts, parleyv1alpha1.EventHistoryReadDeferred) }).Should(BeNumerically(">", 0))
	})
})

// withEvent counts the objects that have an event with reason.
func withEvent[T client.Object](objs []T, reason string) int {
	n := 0
	for _, o := range objs {
		if slices.Contains(eventReasons(o), reason) {
			n++
		}
	}
	return n
}

// manualCheckpoint is a Manual Checkpoint of conv's latest turn.
func manualCheckpoint(conv *parleyv1alpha1.Conversation) *parleyv1alpha1.Checkpoint {
	return &parleyv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "manual-", Namespace: conv.Namespace},
		Spec:       parleyv1alpha1.CheckpointSpec{ConversationRef: parleyv1alpha1.ConversationReference{Name: conv.Name}},
	}
}
