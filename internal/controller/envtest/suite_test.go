// Package envtest runs the controllers against a real kube-apiserver and etcd (envtest) and a
// real S3-compatible server (versitygw) on 127.0.0.1, so schema validation, CEL rules,
// defaulting, the status subresource, conflicts and conditional writes are the servers' own.
// The pure decisions are tested without either in package controller.
package envtest

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/compaction"
	"github.com/parley-dev/parley/internal/controller"
	"github.com/parley-dev/parley/internal/eventsink"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/internal/sessionapi"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/repopath"
	"github.com/parley-dev/parley/test/support/s3server"
)

var (
	// agentCA is the Session API CA the controller hands agents in their bundles.
	agentCA   []byte
	ctx       context.Context
	cancel    context.CancelFunc
	testEnv   *crenvtest.Environment
	cfg       *rest.Config
	k8sClient client.Client
	repoRoot  string
	s3srv     *s3server.Server
	stores    *historystore.Stores
	compactor *compaction.Runner
	// sessionURL is the Session API of the suite, served from httptest; sessionReader is what it
	// reads Conversations through (the manager's cache, which may lag k8sClient's writes).
	sessionURL    string
	sessionReader client.Reader
	// reconciles counts Conversation reconciles per object.
	reconciles sync.Map
	// testBucket holds every objectStore history of the suite.
	testBucket = "parley-envtest"
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "Controller Suite (envtest + versitygw)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())

	Expect(parleyv1alpha1.AddToScheme(scheme.Scheme)).To(Succeed())

	var err error
	repoRoot, err = repopath.Root()
	Expect(err).NotTo(HaveOccurred())
	assets, err := kubeenv.AssetsDir()
	Expect(err).NotTo(HaveOccurred())

	testEnv = &crenvtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	cfg.QPS, cfg.Burst = 500, 1000

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())

	s3srv, err = s3server.Start(s3server.Options{})
	Expect(err).NotTo(HaveOccurred())
	Expect(s3.EnsureBucket(ctx, s3.Config{
		Endpoint: s3srv.Endpoint, Bucket: testBucket, Insecure: true,
		Addressing: s3.AddressingPath, AccessKeyID: s3srv.AccessKey, SecretAccessKey: s3srv.SecretKey,
	})).To(Succeed())

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   controller.CacheOptions(),
	})
	Expect(err).NotTo(HaveOccurred())
	// The ConfigMap histories' own client reads the apiserver, not the cache, as in cmd/manager.
	stores = &historystore.Stores{ConfigMaps: k8sClient, Secrets: mgr.GetAPIReader(), SecretTTL: time.Second}
	Expect(mgr.Add(stores)).To(Succeed())
	// As cmd/manager does: this replica runs the controller, so the Session API hands its
	// activity to the reconcile instead of patching status itself.
	activity := &session.Activity{Client: k8sClient, Local: mgr.Elected()}
	sessions := &session.Sessions{Stores: stores, Views: &journal.Views{}, Activity: activity}
	// Short backoffs so a failing summarizer is retried within a spec's patience.
	compactor = &compaction.Runner{
		Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Sessions: sessions, Clock: clock.RealClock{},
		InitialBackoff: 300 * time.Millisecond, MaxBackoff: 2 * time.Second, SummarizerTimeout: 5 * time.Second,
	}
	Expect(mgr.Add(compactor)).To(Succeed())
	Expect(controller.SetupIndexes(ctx, mgr)).To(Succeed())
	agentCA, _, err = sessionapi.NewCA(time.Now(), []string{"localhost"})
	Expect(err).NotTo(HaveOccurred())
	// Events as cmd/manager sends them (protobuf, bounded), so the specs that read them check that path.
	eventBroadcaster, err := eventsink.Start(ctx, cfg, mgr.GetHTTPClient(), eventsink.DefaultInFlight)
	Expect(err).NotTo(HaveOccurred())
	Expect((&controller.ConversationReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Scheme:                  mgr.GetScheme(),
		Recorder:                eventBroadcaster.NewRecorder(mgr.GetScheme(), "parley-conversation"),
		Sessions:                sessions,
		Compactor:               compactor,
		Activity:                activity,
		Clock:                   clock.RealClock{},
		MaxConcurrentReconciles: 4,
		AgentAPIURL:             "https://parley-session-api.parley-system.svc:8082",
		AgentCA:                 func() []byte { return agentCA },
		NodeLostGrace:           3 * time.Second,
		Observe: func(req ctrl.Request) {
			n, _ := reconciles.LoadOrStore(req.NamespacedName, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		},
	}).SetupWithManager(mgr)).To(Succeed())
	Expect((&controller.CheckpointReconciler{
		Client:   mgr.GetClient(),
		Scheme:   mgr.GetScheme(),
		Recorder: eventBroadcaster.NewRecorder(mgr.GetScheme(), "parley-checkpoint"),
		Sessions: sessions,
	}).SetupWithManager(mgr)).To(Succeed())

	Expect(mgr.Add(activity)).To(Succeed())
	sessionReader = mgr.GetClient()
	api := &sessionapi.Server{
		Reader: sessionReader, Writer: k8sClient, Sessions: sessions,
		Auth: &sessionapi.Authorizer{Client: k8sClient, TTL: time.Second},
	}
	srv := httptest.NewServer(api.Handler())
	DeferCleanup(srv.Close)
	sessionURL = srv.URL

	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	cancel()
	if s3srv != nil {
		s3srv.Stop()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// reconcileCount is how often the Conversation controller reconciled obj so far.
func reconcileCount(obj client.Object) int64 {
	n, ok := reconciles.Load(client.ObjectKeyFromObject(obj))
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

func clientKey(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }

// s3Secret creates the credentials Secret of the suite's S3 server in a namespace.
func s3Secret(namespace, name string) *corev1.Secret {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data: map[string][]byte{
			s3.SecretAccessKeyID:     []byte(s3srv.AccessKey),
			s3.SecretSecretAccessKey: []byte(s3srv.SecretKey),
		},
	}
	return sec
}

// objectStoreHistory is an objectStore spec on the suite's S3 server under prefix.
func objectStoreHistory(prefix, secret string) parleyv1alpha1.HistorySpec {
	return parleyv1alpha1.HistorySpec{ObjectStore: &parleyv1alpha1.ObjectStoreHistory{
		Endpoint: "http://" + s3srv.Endpoint, Bucket: testBucket, Prefix: prefix, ForcePathStyle: true, Insecure: true,
		CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: secret},
	}}
}
