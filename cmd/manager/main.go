// Command manager runs Parley's controllers.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/compaction"
	"github.com/parley-dev/parley/internal/controller"
	"github.com/parley-dev/parley/internal/eventsink"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/internal/sessionapi"
	"github.com/parley-dev/parley/internal/version"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(parleyv1alpha1.AddToScheme(scheme))
}

// options are the manager's command-line flags.
type options struct {
	metricsAddr          string
	secureMetrics        bool
	probeAddr            string
	enableLeaderElection bool
	leaderElectionNS     string
	watchNamespaces      string
	enableHTTP2          bool
	kubeAPIQPS           float64
	kubeAPIBurst         int
	historyAPIQPS        float64
	historyAPIBurst      int
	decodeBudget         int64
	concurrency          int
	historyIOPerNS       int
	eventsInFlight       int
	compactions          int
	compactionInterval   time.Duration
	sessionAPIAddr       string
	sessionAPIInsecure   bool
	sessionAPICertDir    string
	sessionAPIHosts      string
	agentAPIURL          string
	agentCAConfigMap     string
	nodeLostGrace        time.Duration
	pprofAddr            string
	sessionAPILimits     sessionapi.Limits
	sessionAPIReviews    sessionapi.ReviewLimits
	sessionAPIAccessLog  bool
	sessionAPIAggregated bool
	apiService           string
}

func main() {
	var o options
	bindFlags(flag.CommandLine, &o)
	showVersion := flag.Bool("version", false, "Print the version and build information and exit.")
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine) // --zap-log-level, --zap-encoder (json|console), ...
	flag.Parse()
	if *showVersion {
		fmt.Println("parley manager " + version.Get().String())
		return
	}

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := run(ctrl.SetupSignalHandler(), o); err != nil {
		ctrl.Log.WithName("setup").Error(err, "manager exited")
		os.Exit(1)
	}
}

// bindFlags binds the manager's options to fs, with their defaults.
func bindFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443",
		"Address the metrics endpoint binds to, e.g. :8443 (HTTPS) or :8080 with --metrics-secure=false. 0 disables it.")
	fs.BoolVar(&o.secureMetrics, "metrics-secure", true,
		"Serve metrics over HTTPS with authentication and authorisation by the apiserver.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to.")
	fs.BoolVar(&o.enableLeaderElection, "leader-elect", true,
		"Elect a leader so that only one of several replicas reconciles at a time.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "",
		"Namespace of the leader-election lease; defaults to the manager's own namespace.")
	fs.StringVar(&o.watchNamespaces, "watch-namespaces", "",
		"Comma-separated namespaces to watch; empty watches all namespaces.")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false,
		"Serve metrics over HTTP/2 (off by default: CVE-2023-44487 and CVE-2023-39325).")
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", 500, "Queries per second to the API server for the controllers (status, events, Checkpoints).")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", 1000, "Burst of queries to the API server for the controllers.")
	fs.Float64Var(&o.historyAPIQPS, "history-api-qps", 600,
		"Queries per second to the API server for ConfigMap histories (their own client: history writes do not starve the controllers).")
	fs.IntVar(&o.historyAPIBurst, "history-api-burst", 1200, "Burst of queries to the API server for ConfigMap histories.")
	fs.Int64Var(&o.decodeBudget, "history-decode-budget", 0,
		"Bytes of memory that reads of stored history (S3 bodies, inflating and decoding segments and indexes) may take at once, all conversations together; a read that does not fit waits up to 10s, then 503 at the Session API. 0: a quarter of GOMEMLIMIT, at least 160 MiB (384 MiB without GOMEMLIMIT).")
	fs.IntVar(&o.concurrency, "max-concurrent-reconciles", 16,
		"Conversations reconciled in parallel, and as many Checkpoints (a reconcile waits on the API server and the history store).")
	fs.IntVar(&o.historyIOPerNS, "max-history-io-per-namespace", 0,
		"Conversation and Checkpoint reconciles of one namespace that may wait on their S3 histories at once, both controllers together (the endpoint is the Conversation's, and may stall); "+
			"more are put off a few seconds (event HistoryReadDeferred), so one namespace cannot hold every worker. 0: a quarter of --max-concurrent-reconciles, at least 1.")
	fs.IntVar(&o.eventsInFlight, "max-events-in-flight", eventsink.DefaultInFlight,
		"Events sent to the API server at once (more wait their turn, so a burst of transitions does not delay status writes).")
	fs.IntVar(&o.compactions, "max-concurrent-compactions", compaction.DefaultConcurrency,
		"Compactions run in parallel by the leader (a Summarize compaction waits on a model for up to minutes).")
	fs.DurationVar(&o.compactionInterval, "min-forced-compaction-interval", sessionapi.DefaultMinCompactionInterval,
		"Least time between two forced compactions of one conversation asked through the Session API (POST …/compact, kubectl parley compact); sooner is 429 with Retry-After.")
	fs.StringVar(&o.sessionAPIAddr, "session-api-bind-address", ":8082",
		"Address the Session API (agents' appends and reads) binds to; 0 disables it. Served by every replica.")
	fs.StringVar(&o.sessionAPICertDir, "session-api-cert-dir", "",
		"Folder with tls.crt and tls.key for the Session API (e.g. a cert-manager Secret); reloaded on change. "+
			"Empty: a self-signed certificate made at start.")
	fs.StringVar(&o.sessionAPIHosts, "session-api-hosts", "localhost,127.0.0.1",
		"Comma-separated names and addresses of the self-signed Session API certificate.")
	fs.BoolVar(&o.sessionAPIInsecure, "session-api-insecure", false,
		"Serve the Session API over plain HTTP. For local runs only: bearer tokens travel in the clear.")
	fs.StringVar(&o.agentAPIURL, "agent-api-url", "",
		"The Session API's URL as agent pods reach it (their PARLEY_API_URL). Empty: "+
			"https://parley-session-api.<the manager's namespace>.svc:8082 when POD_NAMESPACE is set. "+
			"With --session-api-insecure an https:// URL becomes http://.")
	fs.StringVar(&o.agentCAConfigMap, "agent-ca-configmap", "",
		"A ConfigMap (key ca.crt, in each agent's namespace) mounted into agent pods as PARLEY_CA_FILE, for a Session API certificate agents do not trust otherwise.")
	fs.DurationVar(&o.nodeLostGrace, "node-lost-grace", controller.DefaultNodeLostGrace,
		"How long an agent pod's node may be NotReady before the agent counts as crashed (NodeLost) and is restarted elsewhere.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "",
		"Address Go's pprof endpoints (/debug/pprof/) bind to, for profiling; empty or 0 disables them. "+
			"Unauthenticated: bind to loopback or keep the port closed.")
	fs.BoolVar(&o.sessionAPIAccessLog, "session-api-access-log", true,
		"Log one line per Session API request at info level (who, which conversation, method and route, status, bytes, duration; never content).")
	fs.BoolVar(&o.sessionAPIAggregated, "session-api-aggregation", true,
		"Serve the Session API's endpoints also as the aggregated group "+sessionapi.AggregatedGroupVersion+" (kubectl parley's path): "+
			"requests the API server proxies, authenticated by its front-proxy client certificate, with the request-header CA and headers read from kube-system/"+
			sessionapi.AuthenticationConfigMapName+".")
	fs.StringVar(&o.apiService, "session-api-apiservice", sessionapi.APIServiceName,
		"The APIService whose caBundle the leader keeps equal to the Session API's published CAs; empty: none.")
	o.sessionAPILimits.Flags(fs)
	o.sessionAPIReviews.Flags(fs)
}

func run(ctx context.Context, o options) error {
	log := ctrl.Log.WithName("setup")
	restCfg := withRates(ctrl.GetConfigOrDie(), o)
	mgr, err := ctrl.NewManager(restCfg, managerOptions(o))
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := setupManager(ctx, restCfg, mgr, o); err != nil {
		return err
	}
	metrics.Register(mgr.GetClient())

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}

	log.Info("starting manager", "leaderElection", o.enableLeaderElection)
	return mgr.Start(ctx)
}

// withRates sets the controllers' client-side rate limits toward the API server on cfg.
func withRates(cfg *rest.Config, o options) *rest.Config {
	cfg.QPS, cfg.Burst = float32(o.kubeAPIQPS), o.kubeAPIBurst
	return cfg
}

// managerOptions are the controller-runtime manager's options from the flags.
func managerOptions(o options) ctrl.Options {
	log := ctrl.Log.WithName("setup")
	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{
		BindAddress:   o.metricsAddr,
		SecureServing: o.secureMetrics,
		TLSOpts:       tlsOpts,
	}
	if o.secureMetrics {
		metricsOpts.FilterProvider = authnAuthzFilter
	}

	cacheOpts := controller.CacheOptions()
	if ns := splitNamespaces(o.watchNamespaces); len(ns) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, n := range ns {
			cacheOpts.DefaultNamespaces[n] = cache.Config{}
		}
		log.Info("watching namespaces", "namespaces", ns)
	}

	return ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.enableLeaderElection,
		LeaderElectionID:        "manager.parley.dev",
		LeaderElectionNamespace: o.leaderElectionNS,
		// Safe because the process exits right after the manager stops.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cacheOpts,
		PprofBindAddress:              o.pprofAddr,
	}
}

// setupManager adds to mgr what the manager runs (history stores, compaction, the
// controllers, Events, the Session API) as the flags say. restCfg is mgr's config: the
// ConfigMap histories and Events get clients of their own from it.
func setupManager(ctx context.Context, restCfg *rest.Config, mgr ctrl.Manager, o options) error {
	stores, err := newStores(restCfg, mgr, o)
	if err != nil {
		return err
	}
	activity := newActivity(mgr, o)
	sessions := &session.Sessions{Stores: stores, Views: &journal.Views{}, Activity: activity}
	if err := controller.SetupIndexes(ctx, mgr); err != nil {
		return err
	}
	compactor := &compaction.Runner{
		Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Sessions: sessions,
		Clock: clock.RealClock{}, Concurrency: o.compactions,
	}
	if err := mgr.Add(compactor); err != nil {
		return fmt.Errorf("adding the compaction runner: %w", err)
	}
	sessionTLS, agentCA, err := sessionAPITLS(ctx, mgr, restCfg, o)
	if err != nil {
		return err
	}
	frontProxy, err := aggregation(mgr, restCfg, o, agentCA)
	if err != nil {
		return err
	}
	eventBroadcaster, err := eventsink.Start(ctx, restCfg, mgr.GetHTTPClient(), o.eventsInFlight)
	if err != nil {
		return err
	}
	// One gate for both controllers: a namespace's history I/O in flight is bounded in total.
	historyGate := controller.NewNamespaceGate(controller.HistoryIOPerNamespace(o.concurrency, o.historyIOPerNS))
	conversations := &controller.ConversationReconciler{
		Client:                      mgr.GetClient(),
		APIReader:                   mgr.GetAPIReader(),
		Scheme:                      mgr.GetScheme(),
		Recorder:                    eventBroadcaster.NewRecorder(mgr.GetScheme(), "parley-conversation"),
		Sessions:                    sessions,
		Compactor:                   compactor,
		Clock:                       clock.RealClock{},
		MaxConcurrentReconciles:     o.concurrency,
		HistoryGate:                 historyGate,
		AgentAPIURL:                 agentAPIURL(o.agentAPIURL, os.Getenv("POD_NAMESPACE"), o.sessionAPIInsecure),
		AgentCAConfigMap:            o.agentCAConfigMap,
		AgentCA:                     agentCA,
		NodeLostGrace:               o.nodeLostGrace,
		MinForcedCompactionInterval: o.compactionInterval,
	}
	if activity != nil {
		conversations.Activity = activity
	}
	if err := conversations.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Conversation controller: %w", err)
	}
	if err := (&controller.CheckpointReconciler{
		Client:   mgr.GetClient(),
		Scheme:   mgr.GetScheme(),
		Recorder: eventBroadcaster.NewRecorder(mgr.GetScheme(), "parley-checkpoint"),
		Sessions: sessions,
		// As many as the Conversations': one namespace's share of the gate then leaves the
		// other namespaces most of the Checkpoint workers too.
		MaxConcurrentReconciles: o.concurrency,
		HistoryGate:             historyGate,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Checkpoint controller: %w", err)
	}

	return addSessionAPI(mgr, sessions, o, sessionTLS, frontProxy)
}

// newStores builds the history seam: ConfigMap histories through their own uncached client
// (the protocol needs fresh reads, and history writes get their own rate budget), Secrets read
// on demand. It runs on every replica: the Session API opens histories on non-leaders too.
func newStores(restCfg *rest.Config, mgr ctrl.Manager, o options) (*historystore.Stores, error) {
	cmCfg := rest.CopyConfig(restCfg)
	cmCfg.QPS, cmCfg.Burst = float32(o.historyAPIQPS), o.historyAPIBurst
	cmClient, err := client.New(cmCfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return nil, fmt.Errorf("creating the ConfigMap history client: %w", err)
	}
	stores := &historystore.Stores{ConfigMaps: cmClient, Secrets: mgr.GetAPIReader()}
	budget := newDecodeBudget(o)
	stores.S3.DecodeBudget, stores.ConfigMap.DecodeBudget = budget, budget
	metrics.DecodeBudget.Set(budget)
	if err := mgr.Add(stores); err != nil {
		return nil, fmt.Errorf("adding the history stores: %w", err)
	}
	return stores, nil
}

// sessionAPITLS sets up the Session API's TLS and returns what agents are told to trust (nil
// when they need none of Parley's): --session-api-cert-dir (its ca.crt, e.g. from
// cert-manager), or a serving certificate per replica signed by a CA the replicas share through
// the Secret parley-session-api-ca in the manager's namespace (POD_NAMESPACE), or, outside a
// cluster, by a CA of this process. Plain HTTP with --session-api-insecure.
func sessionAPITLS(ctx context.Context, mgr ctrl.Manager, restCfg *rest.Config, o options) (sessionapi.TLSSetup, func() []byte, error) {
	if o.sessionAPIAddr == "0" || o.sessionAPIAddr == "" || o.sessionAPIInsecure {
		return nil, nil, nil
	}
	certOpts := sessionapi.CertificatesOptions{
		CertDir: o.sessionAPICertDir, Hosts: splitNamespaces(o.sessionAPIHosts), Namespace: os.Getenv("POD_NAMESPACE"), Clock: clock.RealClock{},
	}
	if certOpts.Namespace != "" {
		// Uncached: the cache does not run before the manager starts, and the first
		// certificate is needed before then.
		c, err := client.New(restCfg, client.Options{Scheme: scheme})
		if err != nil {
			return nil, nil, err
		}
		certOpts.Client = c
	}
	certs, err := sessionapi.NewCertificates(ctx, certOpts)
	if err != nil {
		return nil, nil, fmt.Errorf("setting up the Session API certificates: %w", err)
	}
	if err := mgr.Add(certs); err != nil {
		return nil, nil, err
	}
	return certs.TLS(), certs.TrustedCA, nil
}

// aggregation sets up the aggregated group: the front-proxy authentication every replica
// serves it with, and the leader's upkeep of the APIService's caBundle from the CAs clients
// trust (trustedCA, nil without Parley's own CA). Nil without TLS: the aggregator reaches the
// Session API over TLS only.
func aggregation(mgr ctrl.Manager, restCfg *rest.Config, o options, trustedCA func() []byte) (*sessionapi.FrontProxy, error) {
	if !o.sessionAPIAggregated || o.sessionAPIAddr == "0" || o.sessionAPIAddr == "" || o.sessionAPIInsecure {
		return nil, nil
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	fp, err := sessionapi.NewFrontProxy(kube)
	if err != nil {
		return nil, fmt.Errorf("setting up the front-proxy authentication: %w", err)
	}
	if err := mgr.Add(fp); err != nil {
		return nil, err
	}
	if o.apiService == "" || trustedCA == nil {
		return fp, nil
	}
	return fp, mgr.Add(&sessionapi.APIServiceCABundle{
		Client: mgr.GetClient(), Name: o.apiService, TrustedCA: trustedCA, Clock: clock.RealClock{},
	})
}

// addSessionAPI serves the Session API on every replica, with the TLS sessionAPITLS set up (nil:
// plain HTTP, --session-api-insecure) and the aggregated group's front-proxy authentication
// (nil: the aggregated paths refuse every request).
func addSessionAPI(mgr ctrl.Manager, sessions *session.Sessions, o options, tlsSetup sessionapi.TLSSetup, frontProxy *sessionapi.FrontProxy) error {
	activity := sessions.Activity
	if activity == nil {
		return nil
	}
	api := &sessionapi.Server{
		Addr: o.sessionAPIAddr, Reader: mgr.GetClient(), Writer: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Sessions: sessions,
		Auth:       &sessionapi.Authorizer{Client: mgr.GetClient(), Reviews: o.sessionAPIReviews},
		FrontProxy: frontProxy, TLS: tlsSetup, Limits: o.sessionAPILimits,
		MinCompactionInterval: o.compactionInterval,
	}
	if o.sessionAPIAccessLog {
		api.AccessLog = ctrl.Log.WithName("session-api-access")
	}
	if o.sessionAPIInsecure {
		ctrl.Log.WithName("setup").Info("WARNING: the Session API serves plain HTTP (--session-api-insecure)")
	}
	if err := mgr.Add(activity); err != nil {
		return err
	}
	return mgr.Add(api)
}

// newActivity is the Session API's batched activity, nil when the Session API is off. Once
// this replica holds the leader lease (at once without election) it hands activity to the
// Conversation controller instead of patching status itself.
func newActivity(mgr ctrl.Manager, o options) *session.Activity {
	if o.sessionAPIAddr == "0" || o.sessionAPIAddr == "" {
		return nil
	}
	return &session.Activity{Client: mgr.GetClient(), Local: mgr.Elected()}
}

// splitNamespaces parses the --watch-namespaces flag.
func splitNamespaces(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// agentAPIURL is the Session API URL agents get: the flag, else the in-cluster Service of the
// manager's namespace (config/default names it parley-session-api). With insecure the API
// speaks plain HTTP, so an https:// URL (config/manager's) becomes http://: an agent told
// https would fail its handshake on every call.
func agentAPIURL(flagValue, namespace string, insecure bool) string {
	u := flagValue
	if u == "" && namespace != "" {
		u = "https://parley-session-api." + namespace + ".svc:8082"
	}
	if rest, ok := strings.CutPrefix(u, "https://"); ok && insecure {
		u = "http://" + rest
	}
	return u
}
