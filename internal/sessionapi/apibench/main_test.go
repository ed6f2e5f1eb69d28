package apibench

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/sessionapi"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/test/support/benchcpu"
	"github.com/parley-dev/parley/test/support/benchenv"
	"github.com/parley-dev/parley/test/support/kubeenv"
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
	var err error
	if env, err = benchenv.Start(); err != nil {
		return nil, err
	}
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
	if err := startManager(); err != nil {
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
	certs, err := sessionapi.NewCertificates(env.Ctx, sessionapi.CertificatesOptions{Hosts: []string{"127.0.0.1"}})
	if err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	apiURL, apiCA = "https://"+addr, certs.TrustedCA()
	api := mgr.SessionAPI()
	api.Addr, api.TLS = addr, certs.TLS()
	api.Limits = sessionapi.Limits{PerConversation: sessionapi.Rate{PerSecond: *conversationRateFlag, Burst: int(2 * *conversationRateFlag)}}
	if err := mgr.Add(api); err != nil {
		return err
	}
	if err := env.StartManager(mgr); err != nil {
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
