package crashbench

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/parley-dev/parley/internal/compaction"
	"github.com/parley-dev/parley/internal/controller"
	"github.com/parley-dev/parley/internal/eventsink"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/test/support/kubeenv"
)

const namespace = "crashbench"

var (
	scheme = runtime.NewScheme()
	// harness is the benchmark's own client (the kubelet's writes, the waits): its calls are
	// not recorded. clientset serves the pod watch.
	harness   client.Client
	clientset kubernetes.Interface
	// harnessStores appends to histories as an agent's Session API calls would.
	harnessStores *historystore.Stores
	// calls and reconciles are what the manager did.
	calls      = &recorder{}
	reconciles = &reconcileLog{}
)

// TestMain starts envtest and the manager only when benchmarks run: `go test ./...` without
// -bench passes through.
func TestMain(m *testing.M) { kubeenv.BenchmarkMain(m, start) }

// start runs the control plane and the manager, configured as cmd/manager's defaults
// configure them (API rates, 16 concurrent reconciles, a separate client for histories).
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
	stop := func() {
		cancel()
		stopEnv()
	}
	if err := startManager(ctx, cfg); err != nil {
		stop()
		return nil, err
	}
	hcfg := rest.CopyConfig(cfg)
	hcfg.QPS, hcfg.Burst = -1, 0
	if harness, err = client.New(hcfg, client.Options{Scheme: scheme}); err != nil {
		stop()
		return nil, err
	}
	if clientset, err = kubernetes.NewForConfig(hcfg); err != nil {
		stop()
		return nil, err
	}
	harnessStores = &historystore.Stores{ConfigMaps: harness, Secrets: harness}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "default"}},
	} {
		if err := harness.Create(ctx, obj); err != nil {
			stop()
			return nil, err
		}
	}
	return stop, nil
}

func startManager(ctx context.Context, cfg *rest.Config) error {
	mcfg := rest.CopyConfig(cfg)
	mcfg.QPS, mcfg.Burst = 500, 1000 // --kube-api-qps, --kube-api-burst defaults
	mcfg.Wrap(calls.wrap)
	mgr, err := ctrl.NewManager(mcfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   controller.CacheOptions(),
	})
	if err != nil {
		return err
	}
	hcfg := rest.CopyConfig(mcfg)    // keeps the recording wrapper
	hcfg.QPS, hcfg.Burst = 600, 1200 // --history-api-qps, --history-api-burst defaults
	cmClient, err := client.New(hcfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	stores := &historystore.Stores{ConfigMaps: cmClient, Secrets: mgr.GetAPIReader()}
	if err := mgr.Add(stores); err != nil {
		return err
	}
	sessions := &session.Sessions{Stores: stores, Views: &journal.Views{}}
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
		Recorder: eventBroadcaster.NewRecorder(mgr.GetScheme(), "parley-conversation"), Sessions: sessions, Compactor: compactor,
		Clock: clock.RealClock{}, MaxConcurrentReconciles: 16,
		AgentAPIURL: "https://parley-session-api.parley-system.svc:8082",
		Observe:     func(req ctrl.Request) { reconciles.note(req.Name) },
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controller.CheckpointReconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: eventBroadcaster.NewRecorder(mgr.GetScheme(), "parley-checkpoint"),
		Sessions: sessions,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	return kubeenv.StartManager(ctx, mgr)
}
