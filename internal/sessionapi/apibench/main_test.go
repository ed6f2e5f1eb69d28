package apibench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/sessionapi"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/benchcpu"
	"github.com/parley-dev/parley/test/support/benchenv"
	"github.com/parley-dev/parley/test/support/frontproxy"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/repopath"
	"github.com/parley-dev/parley/test/support/s3server"
)

const (
	namespace = "apibench"
	bucket    = "apibench"
	s3Secret  = "s3"
)

var (
	// env is the control plane and the harness's clients.
	env *benchenv.Env
	// harness is env's client (setup, waits, raw ConfigMap writes).
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
	// aggregated reaches the Session API through the API server's aggregator, as the same
	// ServiceAccount with a token for the API server (nil without a host address the
	// aggregator can be routed to).
	aggregated *rest.Config
	// hostIP is the address the aggregator dials the Session API at (empty: none).
	hostIP string
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
	// k8s.io/apiserver's front-proxy authentication logs through klog.
	klog.SetLogger(logr.Discard())
	// The API server as a cluster's control plane is for API aggregation: the aggregated path's
	// phases go through it to the Session API.
	dir, err := os.MkdirTemp("", "parley-apibench-")
	if err != nil {
		return nil, err
	}
	fp, err := frontproxy.New(dir)
	if err != nil {
		return nil, err
	}
	hostIP, _ = frontproxy.HostIPv4()
	if env, err = benchenv.Start(fp.Configure); err != nil {
		return nil, err
	}
	env.OnStop(func() { _ = os.RemoveAll(dir) })
	harness = env.Harness
	if s3srv, err = s3server.Start(s3server.Options{}); err != nil {
		env.Stop()
		return nil, err
	}
	env.OnStop(s3srv.Stop)
	procs = benchcpu.Processes{
		"process": os.Getpid(), "kube-apiserver": benchcpu.ChildPID("kube-apiserver"),
		"etcd": benchcpu.ChildPID("etcd"), "versitygw": s3srv.PID(),
	}
	if err := s3.EnsureBucket(env.Ctx, s3.Config{
		Endpoint: "http://" + s3srv.Endpoint, Bucket: bucket, Addressing: s3.AddressingPath,
		AccessKeyID: s3srv.AccessKey, SecretAccessKey: s3srv.SecretKey,
	}); err != nil {
		env.Stop()
		return nil, err
	}
	hcfg := rest.CopyConfig(env.Config)
	hcfg.QPS, hcfg.Burst = -1, 0
	if apiServerHC, err = rest.HTTPClientFor(hcfg); err != nil {
		env.Stop()
		return nil, err
	}
	apiServerHost = hcfg.Host
	if err := setupNamespace(); err != nil {
		env.Stop()
		return nil, err
	}
	// Before the manager starts, as kubectl apply of dist/install.yaml creates it: the leader
	// writes its caBundle at once.
	if err := createAPIService(); err != nil {
		env.Stop()
		return nil, err
	}
	if err := startManager(); err != nil {
		env.Stop()
		return nil, err
	}
	if err := registerAggregation(); err != nil {
		env.Stop()
		return nil, err
	}
	return env.Stop, nil
}

// setupNamespace creates the namespace, the S3 credentials, and a ServiceAccount allowed to
// read and write conversations/history (as config/rbac's agent role grants it) with its
// token: one identity serves every client, authorised by RBAC alone.
func setupNamespace() error {
	if err := env.Namespace(namespace); err != nil {
		return err
	}
	if err := harness.Create(env.Ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: s3Secret}, Data: map[string][]byte{
		s3.SecretAccessKeyID: []byte(s3srv.AccessKey), s3.SecretSecretAccessKey: []byte(s3srv.SecretKey),
	}}); err != nil {
		return err
	}
	var err error
	token, err = env.HistoryWriter(namespace, "agent")
	return err
}

// startManager runs the manager as cmd/manager wires it with its default flags, serving the
// Session API over TLS on a loopback port with a certificate from a CA of this process.
func startManager() error {
	mgr, err := env.NewManager(benchenv.ManagerOptions{})
	if err != nil {
		return err
	}
	informers = mgr.GetCache()
	stores = mgr.Stores
	// The certificate names the Service the aggregator verifies it for, and the addresses
	// clients dial.
	hosts := []string{"127.0.0.1", frontproxy.ServiceHost}
	if hostIP != "" {
		hosts = append(hosts, hostIP)
	}
	certs, err := sessionapi.NewCertificates(env.Ctx, sessionapi.CertificatesOptions{Hosts: hosts})
	if err != nil {
		return err
	}
	if err := mgr.Add(certs); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	apiURL, apiCA = "https://"+addr, certs.TrustedCA()
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	// As cmd/manager wires it: every replica authenticates the aggregator's requests, and the
	// leader keeps the APIService's caBundle.
	fp, err := sessionapi.NewFrontProxy(kube)
	if err != nil {
		return err
	}
	if err := mgr.Add(fp); err != nil {
		return err
	}
	if err := mgr.Add(&sessionapi.APIServiceCABundle{
		Client: mgr.GetClient(), Name: sessionapi.APIServiceName, TrustedCA: certs.TrustedCA, Clock: clock.RealClock{},
	}); err != nil {
		return err
	}
	api := mgr.SessionAPI()
	api.Addr, api.TLS, api.FrontProxy = addr, certs.TLS(), fp
	if hostIP != "" {
		// Also where the aggregator dials it.
		_, port, _ := net.SplitHostPort(addr)
		api.Addr = net.JoinHostPort("0.0.0.0", port)
	}
	api.Limits = sessionapi.Limits{PerConversation: sessionapi.Rate{PerSecond: *conversationRateFlag, Burst: int(2 * *conversationRateFlag)}}
	if err := mgr.Add(api); err != nil {
		return err
	}
	if err := env.StartManager(mgr); err != nil {
		return err
	}
	return waitListening(addr)
}

// createAPIService creates the install's namespace and APIService, unless no host address can
// be the Session API Service's endpoint.
func createAPIService() error {
	if hostIP == "" {
		return nil
	}
	if err := harness.Create(env.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: frontproxy.Namespace}}); err != nil {
		return err
	}
	root, err := repopath.Root()
	if err != nil {
		return err
	}
	return frontproxy.CreateAPIService(env.Ctx, harness, root)
}

// registerAggregation publishes the Session API Service with this host's address as its
// endpoint, waits until the aggregator finds the group available, lets the agent
// ServiceAccount append through the aggregated group and mints its token for the API server:
// the aggregated phases act as the same identity as the direct ones. Without a host address
// the aggregator could be routed to, it does nothing (the aggregated benchmark skips).
func registerAggregation() error {
	if hostIP == "" {
		return nil
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(apiURL, "https://"))
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return err
	}
	if err := frontproxy.PublishService(env.Ctx, harness, hostIP, int32(p)); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(env.Ctx, 2*time.Minute)
	defer cancel()
	if err := frontproxy.WaitAvailable(ctx, harness); err != nil {
		return err
	}
	const name = "agent-aggregated"
	for _, obj := range []client.Object{
		// The API server's check before it proxies an aggregated append.
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{wire.AggregatedGroup}, Resources: []string{"conversations/messages"}, Verbs: []string{"create"},
			}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "agent"}},
		},
	} {
		if err := harness.Create(env.Ctx, obj); err != nil {
			return err
		}
	}
	tr := &authnv1.TokenRequest{}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"}}
	if err := harness.SubResource("token").Create(env.Ctx, sa, tr); err != nil {
		return fmt.Errorf("minting the agent's API server token: %w", err)
	}
	aggregated = rest.AnonymousClientConfig(env.Config)
	aggregated.BearerToken = tr.Status.Token
	return nil
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
