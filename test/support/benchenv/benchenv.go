// Package benchenv starts what the benchmarks that run the manager inside their own process
// share: envtest with Parley's CRDs, the benchmark's own unthrottled clients, and the manager
// wired as cmd/manager wires it with its default flags on the replica that holds the lease
// (API rates, 16 concurrent reconciles, a separate client for ConfigMap histories, compaction,
// Events, the Session API's activity handed to the local reconcile). A benchmark whose figure
// is the manager's memory runs the binary instead (test/scale).
package benchenv

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/parley-dev/parley/internal/compaction"
	"github.com/parley-dev/parley/internal/controller"
	"github.com/parley-dev/parley/internal/eventsink"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/internal/sessionapi"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/kubeenv"
)

// The manager's defaults (cmd/manager's flags).
const (
	kubeAPIQPS, kubeAPIBurst       = 500, 1000 // --kube-api-qps, --kube-api-burst
	historyAPIQPS, historyAPIBurst = 600, 1200 // --history-api-qps, --history-api-burst
	concurrentReconciles           = 16        // --max-concurrent-reconciles
	agentAPIURL                    = "https://parley-session-api.parley-system.svc:8082"
)

// Env is a running control plane and the benchmark's clients.
type Env struct {
	// Ctx ends when Stop is called.
	Ctx context.Context
	// Config is envtest's admin config, with the rates envtest sets.
	Config *rest.Config
	Scheme *runtime.Scheme
	// Harness and Clientset are the benchmark's own clients, unthrottled: what it does (the
	// kubelet's writes, the waits, the watches) is not the manager's work.
	Harness   client.Client
	Clientset kubernetes.Interface

	stops []func()
}

// Start starts envtest with Parley's CRDs (each configure applied to the environment first: API
// server flags) and the harness's clients, with the controller-runtime logger discarded. On an
// error it stops what it started.
func Start(configure ...func(*envtest.Environment)) (*Env, error) {
	ctrllog.SetLogger(logr.Discard())
	e := &Env{Scheme: runtime.NewScheme()}
	if err := kubeenv.AddToScheme(e.Scheme); err != nil {
		return nil, err
	}
	cfg, stopEnv, err := kubeenv.StartWithCRDs(configure...)
	if err != nil {
		return nil, err
	}
	e.Config = cfg
	ctx, cancel := context.WithCancel(context.Background())
	e.Ctx = ctx
	e.stops = append(e.stops, stopEnv, cancel)
	hcfg := rest.CopyConfig(cfg)
	hcfg.QPS, hcfg.Burst = -1, 0
	if e.Harness, err = client.New(hcfg, client.Options{Scheme: e.Scheme}); err != nil {
		e.Stop()
		return nil, err
	}
	if e.Clientset, err = kubernetes.NewForConfig(hcfg); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

// OnStop adds f to what Stop does; Stop calls them in reverse order.
func (e *Env) OnStop(f func()) { e.stops = append(e.stops, f) }

// Stop stops what Start and OnStop started, the latest first.
func (e *Env) Stop() {
	for i := len(e.stops) - 1; i >= 0; i-- {
		e.stops[i]()
	}
	e.stops = nil
}

// Namespace creates namespace ns with its default ServiceAccount (envtest runs no controller
// that would make it), which agent pods run as.
func (e *Env) Namespace(ns string) error {
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}},
	} {
		if err := e.Harness.Create(e.Ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// HistoryWriter creates ServiceAccount sa in ns allowed to read and write the histories of
// ns (as config/rbac's agent role grants it) and returns a token of it for audience parley,
// bound to no pod: RBAC alone authorises it.
func (e *Env) HistoryWriter(ns, sa string) (string, error) {
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{"parley.dev"}, Resources: []string{"conversations/" + sessionapi.HistorySubresource},
				Verbs: []string{"get", "create"},
			}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: sa}},
		},
	} {
		if err := e.Harness.Create(e.Ctx, obj); err != nil {
			return "", err
		}
	}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{wire.Audience}}}
	acct := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}
	if err := e.Harness.SubResource("token").Create(e.Ctx, acct, tr); err != nil {
		return "", fmt.Errorf("minting a token of %s/%s: %w", ns, sa, err)
	}
	return tr.Status.Token, nil
}

// ManagerOptions change what NewManager wires.
type ManagerOptions struct {
	// Wrap wraps the manager's transport to the API server (to record its calls).
	Wrap transport.WrapperFunc
	// Observe is called on every Conversation reconcile.
	Observe func(ctrl.Request)
}

// Manager is the manager, not started yet, and the parts a benchmark reaches into.
type Manager struct {
	ctrl.Manager
	Stores   *historystore.Stores
	Sessions *session.Sessions
}

// NewManager wires the manager as cmd/manager does with its default flags, without leader
// election (this replica runs the controllers). Serve the Session API with SessionAPI; run
// it with StartManager.
func (e *Env) NewManager(opts ManagerOptions) (*Manager, error) {
	mcfg := rest.CopyConfig(e.Config)
	mcfg.QPS, mcfg.Burst = kubeAPIQPS, kubeAPIBurst
	if opts.Wrap != nil {
		mcfg.Wrap(opts.Wrap)
	}
	mgr, err := ctrl.NewManager(mcfg, ctrl.Options{
		Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: controller.CacheOptions(),
	})
	if err != nil {
		return nil, err
	}
	hcfg := rest.CopyConfig(mcfg) // keeps the wrapper
	hcfg.QPS, hcfg.Burst = historyAPIQPS, historyAPIBurst
	cmClient, err := client.New(hcfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		return nil, err
	}
	stores := &historystore.Stores{ConfigMaps: cmClient, Secrets: mgr.GetAPIReader()}
	if err := mgr.Add(stores); err != nil {
		return nil, err
	}
	activity := &session.Activity{Client: mgr.GetClient(), Local: mgr.Elected()}
	if err := mgr.Add(activity); err != nil {
		return nil, err
	}
	sessions := &session.Sessions{Stores: stores, Views: &journal.Views{}, Activity: activity}
	if err := controller.SetupIndexes(e.Ctx, mgr); err != nil {
		return nil, err
	}
	compactor := &compaction.Runner{
		Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Sessions: sessions, Clock: clock.RealClock{},
	}
	if err := mgr.Add(compactor); err != nil {
		return nil, err
	}
	events, err := eventsink.Start(e.Ctx, mcfg, mgr.GetHTTPClient(), eventsink.DefaultInFlight)
	if err != nil {
		return nil, err
	}
	if err := (&controller.ConversationReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
		Recorder: events.NewRecorder(mgr.GetScheme(), "parley-conversation"),
		Sessions: sessions, Compactor: compactor, Activity: activity,
		Clock: clock.RealClock{}, MaxConcurrentReconciles: concurrentReconciles,
		AgentAPIURL: agentAPIURL, Observe: opts.Observe,
	}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := (&controller.CheckpointReconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(),
		Recorder: events.NewRecorder(mgr.GetScheme(), "parley-checkpoint"), Sessions: sessions,
	}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return &Manager{Manager: mgr, Stores: stores, Sessions: sessions}, nil
}

// SessionAPI is the Session API as cmd/manager configures it (the cache to read
// Conversations, TokenReview and SubjectAccessReview to authorise); the benchmark sets how it
// is served (Addr, TLS, Limits) or serves its Handler itself.
func (m *Manager) SessionAPI() *sessionapi.Server {
	return &sessionapi.Server{
		Reader: m.GetClient(), Writer: m.GetClient(), Sessions: m.Sessions,
		Auth: &sessionapi.Authorizer{Client: m.GetClient()},
	}
}

// StartManager runs m until Stop and waits for its cache to sync.
func (e *Env) StartManager(m *Manager) error { return kubeenv.StartManager(e.Ctx, m) }
