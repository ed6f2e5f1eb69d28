package wakebench

import (
	"net/http/httptest"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/test/support/benchenv"
	"github.com/parley-dev/parley/test/support/kubeenv"
)

const namespace = "wakebench"

var (
	// env is the control plane and the harness's clients (the kubelet's writes, the waits,
	// the pod watch).
	env *benchenv.Env
	// cached is what the manager's cache (and so the Session API) sees.
	cached client.Reader
	// person is a Session API client as a ServiceAccount allowed to write histories.
	person *parleyclient.Client
)

// TestMain starts envtest, the manager and the Session API only when benchmarks run.
func TestMain(m *testing.M) { kubeenv.BenchmarkMain(m, start) }

func start() (func(), error) {
	var err error
	if env, err = benchenv.Start(); err != nil {
		return nil, err
	}
	if err := env.Namespace(namespace); err != nil {
		env.Stop()
		return nil, err
	}
	token, err := env.HistoryWriter(namespace, "person")
	if err != nil {
		env.Stop()
		return nil, err
	}
	mgr, err := env.NewManager(benchenv.ManagerOptions{})
	if err != nil {
		env.Stop()
		return nil, err
	}
	cached = mgr.GetClient()
	// The Session API over plain HTTP in this process, as the manager serves it.
	srv := httptest.NewServer(mgr.SessionAPI().Handler())
	env.OnStop(srv.Close)
	if err := env.StartManager(mgr); err != nil {
		env.Stop()
		return nil, err
	}
	if person, err = parleyclient.New(parleyclient.Options{URL: srv.URL, Token: token, Retries: -1}); err != nil {
		env.Stop()
		return nil, err
	}
	return env.Stop, nil
}
