package crashbench

import (
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/test/support/benchenv"
	"github.com/parley-dev/parley/test/support/kubeenv"
)

const namespace = "crashbench"

var (
	// env is the control plane and the harness's clients (the kubelet's writes, the waits,
	// the pod watch): their calls are not recorded.
	env *benchenv.Env
	// harness is env's client.
	harness client.Client
	// harnessStores appends to histories as an agent's Session API calls would.
	harnessStores *historystore.Stores
	// calls and reconciles are what the manager did.
	calls      = &recorder{}
	reconciles = &reconcileLog{}
)

// TestMain starts envtest and the manager only when benchmarks run: `go test ./...` without
// -bench passes through.
func TestMain(m *testing.M) { kubeenv.BenchmarkMain(m, start) }

// start runs the control plane and the manager as cmd/manager's defaults configure it,
// recording every API call the manager makes and every Conversation reconcile.
func start() (func(), error) {
	var err error
	if env, err = benchenv.Start(); err != nil {
		return nil, err
	}
	harness = env.Harness
	harnessStores = &historystore.Stores{ConfigMaps: harness, Secrets: harness}
	mgr, err := env.NewManager(benchenv.ManagerOptions{
		Wrap:    calls.wrap,
		Observe: func(req ctrl.Request) { reconciles.note(req.Name) },
	})
	if err != nil {
		env.Stop()
		return nil, err
	}
	if err := env.StartManager(mgr); err != nil {
		env.Stop()
		return nil, err
	}
	if err := env.Namespace(namespace); err != nil {
		env.Stop()
		return nil, err
	}
	return env.Stop, nil
}
