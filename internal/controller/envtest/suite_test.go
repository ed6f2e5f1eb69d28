// Package envtest runs the controllers against a real kube-apiserver and etcd (envtest) and a
// real S3-compatible server (versitygw) on 127.0.0.1, so schema validation, CEL rules,
// defaulting, the status subresource, conflicts and conditional writes are the servers' own.
// The pure decisions are tested without either in package controller; the Session API's specs
// are in internal/sessionapi/envtest, the clients' in test/clients, admission's in
// api/v1alpha1/validation.
package envtest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/test/support/operatorenv"
	"github.com/parley-dev/parley/test/support/s3server"
)

var (
	env *operatorenv.Env
	// The parts of env the specs use.
	ctx       context.Context
	k8sClient client.Client
	s3srv     *s3server.Server
	stores    *historystore.Stores
	// agentCA is the Session API CA the controller hands agents in their bundles.
	agentCA []byte
	// reconciles counts Conversation reconciles per object.
	reconciles sync.Map
	// testBucket holds every objectStore history of the suite.
	testBucket = operatorenv.Bucket
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "Controller Suite (envtest + versitygw)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = operatorenv.Start(operatorenv.Options{
		Observe: func(req ctrl.Request) {
			n, _ := reconciles.LoadOrStore(req.NamespacedName, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		},
	})
	Expect(err).NotTo(HaveOccurred())
	ctx, k8sClient, s3srv, stores, agentCA = env.Ctx, env.Client, env.S3, env.Stores, env.AgentCA
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
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

// The helpers the controller's specs share with the Session API's and the clients'.
var (
	newConversation = operatorenv.NewConversation
	randSuffix      = operatorenv.RandSuffix
)

func fetch(obj client.Object) func(g Gomega)                        { return env.Fetch(obj) }
func historyReady(conv *parleyv1alpha1.Conversation) func(g Gomega) { return env.HistoryReady(conv) }

func checkpointReady(ckpt *parleyv1alpha1.Checkpoint) func(g Gomega) {
	return env.CheckpointReady(ckpt)
}
func eventReasons(obj client.Object) []string { return env.EventReasons(obj) }

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
