package apibench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/parley-dev/parley/internal/compaction"
	"github.com/parley-dev/parley/internal/controller"
	"github.com/parley-dev/parley/internal/eventsink"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/internal/sessionapi"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/benchcpu"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/s3server"
)

const (
	namespace = "apibench"
	bucket    = "apibench"
	s3Secret  = "s3"
)

var (
	scheme = runtime.NewScheme()
	// harness is the benchmark's own client (setup, waits, raw ConfigMap writes).
	harness client.Client
	// informers are the manager's: statusLag follows the Conversations through them.
	informers cache.Informers
	// stores are the manager's history stores: the store-only phases use them as the Session
	// API does.
	stores *historystore.Stores
	s3srv  *s3server.Server
	// apiURL, apiCA and token reach the Session API as an agent would.
	apiURL string
	apiCA  []byte
	token  string
	// apiServerHC and apiServerHost reach the API server's /metrics.
	apiServerHC   *http.Client
	apiServerHost string
	// procs are the processes whose CPU each phase reports: this one (manager, Session API and
	// clients), the API server, etcd and the S3 server.
	procs benchcpu.Processes
)

// TestMain starts envtest, versitygw and the manager only when benchmarks run: `go test ./...`
// without -bench passes through.
func TestMain(m *testing.M) { kubeenv.BenchmarkMain(m, start) }

func start() (func(), error) {
	ctrllog.SetLogger(logr.Discard())
	if err := kubeenv.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cfg, stopEnv, err := kubeenv.StartWithCRDs()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stops := make([]func(), 0, 3)
	stops = append(stops, stopEnv, cancel)
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if s3srv, err = s3server.Start(s3server.Options{}); err != nil {
		stop()
		return nil, err
	}
	stops = append(stops, s3srv.Stop)
	procs = benchcpu.Processes{
		"process": os.Getpid(), "kube-apiserver": benchcpu.ChildPID("kube-apiserver"),
		"etcd": benchcpu.ChildPID("etcd"), "versitygw": s3srv.PID(),
	}
	if err := s3.EnsureBucket(ctx, s3.Config{
		Endpoint: "http://" + s3srv.Endpoint, Bucket: bucket, Addressing: s3.AddressingPath,
		AccessKeyID: s3srv.AccessKey, SecretAccessKey: s3srv.SecretKey,
	}); err != nil {
		stop()
		return nil, err
	}
	hcfg := rest.CopyConfig(cfg)
	hcfg.QPS, hcfg.Burst = -1, 0
	if harness, err = client.New(hcfg, client.Options{Scheme: scheme}); err != nil {
		stop()
		return nil, err
	}
	if apiServerHC, err = rest.HTTPClientFor(hcfg); err != nil {
		stop()
		return nil, err
	}
	apiServerHost = hcfg.Host
	if err := setupNamespace(ctx); err != nil {
		stop()
		return nil, err
	}
	if err := startManager(ctx, cfg); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// setupNamespace creates the namespace, the S3 credentials, and a ServiceAccount allowed to
// read and write conversations/history (as config/rbac's agent role grants it), and mints its
// token for audience parley with the TokenRequest API. The token is not bound to a pod: one
// identity serves every client, authorised by RBAC alone.
func setupNamespace(ctx context.Context) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: s3Secret}, Data: map[string][]byte{
			s3.SecretAccessKeyID: []byte(s3srv.AccessKey), s3.SecretSecretAccessKey: []byte(s3srv.SecretKey),
		}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{"parley.dev"}, Resources: []string{"conversations/" + sessionapi.HistorySubresource},
				Verbs: []string{"get", "create"},
			}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "agent"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: namespace, Name: "agent"}},
		},
	}
	for _, o := range objs {
		if err := harness.Create(ctx, o); err != nil {
			return err
		}
	}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{wire.Audience}}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"}}
	if err := harness.SubResource("token").Create(ctx, sa, tr); err != nil {
		return fmt.Errorf("minting the agent token: %w", err)
	}
	token = tr.Status.Token
	return nil
}

// startManager wires the manager as cmd/manager does with its default flags (API rates, 16
// concurrent reconciles, a separate client for ConfigMap histories, the Session API on every
// replica with batched activity), without leader election, serving the API over TLS on a
// loopback port with a certificate from a CA of this process.
func startManager(ctx context.Context, cfg *rest.Config) error {
	mcfg := rest.CopyConfig(cfg)
	mcfg.QPS, mcfg.Burst = 500, 1000 // --kube-api-qps, --kube-api-burst
	mgr, err := ctrl.NewManager(mcfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   controller.CacheOptions(),
	})
	if err != nil {
		return err
	}
	hcfg := rest.CopyConfig(mcfg)
	hcfg.QPS, hcfg.Burst = 600, 1200 // --history-api-qps, --history-api-burst
	cmClient, err := client.New(hcfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	informers = mgr.GetCache()
	stores = &historystore.Stores{ConfigMaps: cmClient, Secrets: mgr.GetAPIReader()}
	if err := mgr.Add(stores); err != nil {
		return err
	}
	// As cmd/manager wires it: the leader's Session API hands activity to the reconciler.
	activity := &session.Activity{Client: mgr.GetClient(), Local: mgr.Elected()}
	sessions := &session.Sessions{Stores: stores, Views: &journal.Views{}, Activity: activity}
	if err := controller.SetupIndexes(ctx, mgr); err != nil {
		return err
	}
	compactor := &compaction.Runner{
		Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Sessions: sessions, Clock: clock.RealClock{},
	}
	if err := mgr.Add(compactor); err != nil {
		return err
	}
	eventBroadcaster, err := eventsink.Start(ctx, cfg, mgr.GetHTTPClient(), eventsink.DefaultInFlight)
	if err != nil {
		return err
	}
	if err := (&controller.ConversationReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
		Recorder: eventBroadcaster.NewRecorder(mgr.GetScheme(), "parley-conversation"), Sessions: sessions, Compactor: compactor, Activity: activity,
		Clock: clock.RealClock{}, MaxConcurrentReconciles: 16,
		AgentAPIURL: "https://parley-session-api.parley-system.svc:8082",
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controller.CheckpointReconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: eventBroadcaster.NewRecorder(mgr.GetScheme(), "parley-checkpoint"),
		Sessions: sessions,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	certs, err := sessionapi.NewCertificates(ctx, sessionapi.CertificatesOptions{Hosts: []string{"127.0.0.1"}})
	if err != nil {
		return err
	}
	tlsSetup, caPEM := certs.TLS(), certs.TrustedCA()
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	apiURL, apiCA = "https://"+addr, caPEM
	if err := mgr.Add(activity); err != nil {
		return err
	}
	if err := mgr.Add(&sessionapi.Server{
		Addr: addr, Reader: mgr.GetClient(), Writer: mgr.GetClient(), Sessions: sessions,
		Auth: &sessionapi.Authorizer{Client: mgr.GetClient()}, TLS: tlsSetup,
		Limits: sessionapi.Limits{PerConversation: sessionapi.Rate{PerSecond: *conversationRateFlag, Burst: int(2 * *conversationRateFlag)}},
	}); err != nil {
		return err
	}
	if err := kubeenv.StartManager(ctx, mgr); err != nil {
		return err
	}
	return waitListening(addr)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String(), nil
}

// waitListening waits until the Session API completes a TLS handshake (a bare TCP probe
// would make the server log a failed handshake).
func waitListening(addr string) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(apiCA)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}); err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the Session API did not listen on %s", addr)
}
