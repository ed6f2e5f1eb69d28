package wakebench

import (
	"context"
	"net/http/httptest"
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/parley-dev/parley/internal/controller"
	"github.com/parley-dev/parley/internal/eventsink"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/internal/sessionapi"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/kubeenv"
)

const namespace = "wakebench"

var (
	scheme = runtime.NewScheme()
	// harness is the benchmark's own client (the kubelet's writes, the waits, the pod watch);
	// cached is what the manager's cache (and so the Session API) sees.
	harness client.WithWatch
	cached  client.Reader
	// person is a Session API client as a ServiceAccount allowed to write histories.
	person *parleyclient.Client
)

// TestMain starts envtest, the manager and the Session API only when benchmarks run.
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
	hcfg := rest.CopyConfig(cfg)
	hcfg.QPS, hcfg.Burst = -1, 0
	if harness, err = client.NewWithWatch(hcfg, client.Options{Scheme: scheme}); err != nil {
		stop()
		return nil, err
	}
	if err := personAccount(ctx); err != nil {
		stop()
		return nil, err
	}
	url, closeAPI, err := startManager(ctx, cfg)
	if err != nil {
		stop()
		return nil, err
	}
	stops = append(stops, closeAPI)
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{wire.Audience}}}
	if err := harness.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "person"}}, tr); err != nil {
		stop()
		return nil, err
	}
	if person, err = parleyclient.New(parleyclient.Options{URL: url, Token: tr.Status.Token, Retries: -1}); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// personAccount creates the namespace and a ServiceAccount that may read and write its
// histories, as a person's role grants it.
func personAccount(ctx context.Context) error {
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "default"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "person"}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "person"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"parley.dev"}, Resources: []string{"conversations/" + sessionapi.HistorySubresource}, Verbs: []string{"get", "create"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "person"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "person"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: namespace, Name: "person"}},
		},
	} {
		if err := harness.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// startManager runs the reconcilers, the activity hand-off and the Session API (plain HTTP)
// as cmd/manager's defaults configure them on the replica that runs the controller.
func startManager(ctx context.Context, cfg *rest.Config) (string, func(), error) {
	mcfg := rest.CopyConfig(cfg)
	mcfg.QPS, mcfg.Burst = 500, 1000 // --kube-api-qps, --kube-api-burst defaults
	mgr, err := ctrl.NewManager(mcfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: controller.CacheOptions(),
	})
	if err != nil {
		return "", nil, err
	}
	hcfg := rest.CopyConfig(mcfg)
	hcfg.QPS, hcfg.Burst = 600, 1200 // --history-api-qps, --history-api-burst defaults
	cmClient, err := client.New(hcfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", nil, err
	}
	stores := &historystore.Stores{ConfigMaps: cmClient, Secrets: mgr.GetAPIReader()}
	if err := mgr.Add(stores); err != nil {
		return "", nil, err
	}
	activity := &session.Activity{Client: mgr.GetClient(), Local: mgr.Elected()}
	if err := mgr.Add(activity); err != nil {
		return "", nil, err
	}
	sessions := &session.Sessions{Stores: stores, Views: &journal.Views{}, Activity: activity}
	if err := controller.SetupIndexes(ctx, mgr); err != nil {
		return "", nil, err
	}
	events, err := eventsink.Start(ctx, cfg, mgr.GetHTTPClient(), eventsink.DefaultInFlight)
	if err != nil {
		return "", nil, err
	}
	if err := (&controller.ConversationReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
		Recorder: events.NewRecorder(mgr.GetScheme(), "parley-conversation"), Sessions: sessions, Activity: activity,
		Clock: clock.RealClock{}, MaxConcurrentReconciles: 16,
		AgentAPIURL: "https://parley-session-api.parley-system.svc:8082",
	}).SetupWithManager(mgr); err != nil {
		return "", nil, err
	}
	cached = mgr.GetClient()
	api := &sessionapi.Server{
		Reader: mgr.GetClient(), Writer: mgr.GetClient(), Sessions: sessions,
		Auth: &sessionapi.Authorizer{Client: mgr.GetClient(), TTL: time.Minute},
	}
	srv := httptest.NewServer(api.Handler())
	if err := kubeenv.StartManager(ctx, mgr); err != nil {
		srv.Close()
		return "", nil, err
	}
	return srv.URL, srv.Close, nil
}
