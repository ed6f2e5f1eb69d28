// Package operatorenv starts the operator as the envtest suites use it: a real kube-apiserver
// and etcd (envtest), a real S3-compatible server (versitygw) with one bucket, and one manager
// running the Conversation and Checkpoint controllers, the compaction runner and the Session
// API (served from httptest), wired as cmd/manager wires them. The controller, Session API and
// client suites each start one, so they test the same assembly without copying it.
package operatorenv

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/compaction"
	"github.com/parley-dev/parley/internal/controller"
	"github.com/parley-dev/parley/internal/eventsink"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/internal/sessionapi"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/repopath"
	"github.com/parley-dev/parley/test/support/s3server"
)

// Bucket holds every objectStore history of an Env.
const Bucket = "parley-envtest"

// NameTakenRetry is how soon the controller tries a taken agent pod or bundle name again.
const NameTakenRetry = time.Second

// CheckpointRefusedRetry is how soon the controller creates again a Checkpoint the API server
// refused.
const CheckpointRefusedRetry = time.Second

// Options change what Start wires.
type Options struct {
	// Observe is called on every Conversation reconcile (a suite counts them with it).
	Observe func(ctrl.Request)
}

// Env is a running operator on envtest.
type Env struct {
	// Ctx ends when Stop is called.
	Ctx      context.Context
	Config   *rest.Config
	RepoRoot string
	// Client reads and writes the apiserver directly (no cache).
	Client client.Client
	S3     *s3server.Server
	Stores *historystore.Stores
	// Sessions is the live conversations of the manager's replica (controller, Session API
	// and compaction share it).
	Sessions *session.Sessions
	// Compactor is the manager's compaction runner.
	Compactor *compaction.Runner
	// AgentCA is the Session API CA the controller hands agents in their bundles.
	AgentCA []byte
	// SessionURL is the Session API; SessionReader is what it reads Conversations through
	// (the manager's cache, which may lag Client's writes).
	SessionURL    string
	SessionReader client.Reader

	cancel     context.CancelFunc
	testEnv    *crenvtest.Environment
	sessionSrv *httptest.Server
	managerErr chan error
}

// Start starts the servers and the manager. On an error it stops what it started.
func Start(opts Options) (env *Env, err error) {
	e := &Env{managerErr: make(chan error, 1)}
	e.Ctx, e.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()
	if err := parleyv1alpha1.AddToScheme(scheme.Scheme); err != nil {
		return nil, err
	}
	if e.RepoRoot, err = repopath.Root(); err != nil {
		return nil, err
	}
	assets, err := kubeenv.AssetsDir()
	if err != nil {
		return nil, err
	}
	e.testEnv = &crenvtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(e.RepoRoot, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	if e.Config, err = e.testEnv.Start(); err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	e.Config.QPS, e.Config.Burst = 500, 1000
	if e.Client, err = client.New(e.Config, client.Options{Scheme: scheme.Scheme}); err != nil {
		return nil, err
	}
	if e.S3, err = s3server.Start(s3server.Options{}); err != nil {
		return nil, fmt.Errorf("starting the S3 server: %w", err)
	}
	if err := s3.EnsureBucket(e.Ctx, s3.Config{
		Endpoint: e.S3.Endpoint, Bucket: Bucket, Insecure: true,
		Addressing: s3.AddressingPath, AccessKeyID: e.S3.AccessKey, SecretAccessKey: e.S3.SecretKey,
	}); err != nil {
		return nil, err
	}
	if err := e.startManager(opts); err != nil {
		return nil, err
	}
	return e, nil
}

// startManager wires the manager as cmd/manager does and starts it in the background.
func (e *Env) startManager(opts Options) error {
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:  scheme.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   controller.CacheOptions(),
	})
	if err != nil {
		return err
	}
	// The ConfigMap histories' own client reads the apiserver, not the cache, as in cmd/manager.
	e.Stores = &historystore.Stores{ConfigMaps: e.Client, Secrets: mgr.GetAPIReader(), SecretTTL: time.Second}
	if err := mgr.Add(e.Stores); err != nil {
		return err
	}
	// As cmd/manager does: this replica runs the controller, so the Session API hands its
	// activity to the reconcile instead of patching status itself.
	activity := &session.Activity{Client: e.Client, Local: mgr.Elected()}
	e.Sessions = &session.Sessions{Stores: e.Stores, Views: &journal.Views{}, Activity: activity}
	// Short backoffs so a failing summarizer is retried within a spec's patience.
	e.Compactor = &compaction.Runner{
		Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Sessions: e.Sessions, Clock: clock.RealClock{},
		InitialBackoff: 300 * time.Millisecond, MaxBackoff: 2 * time.Second, SummarizerTimeout: 5 * time.Second,
	}
	if err := mgr.Add(e.Compactor); err != nil {
		return err
	}
	if err := controller.SetupIndexes(e.Ctx, mgr); err != nil {
		return err
	}
	if e.AgentCA, _, err = sessionapi.NewCA(time.Now(), []string{"localhost"}); err != nil {
		return err
	}
	// Events as cmd/manager sends them (protobuf, bounded), so the specs that read them check that path.
	events, err := eventsink.Start(e.Ctx, e.Config, mgr.GetHTTPClient(), eventsink.DefaultInFlight)
	if err != nil {
		return err
	}
	// Both controllers share one gate and four workers each, as cmd/manager wires them.
	const workers = 4
	historyGate := controller.NewNamespaceGate(controller.HistoryIOPerNamespace(workers, 0))
	if err := (&controller.ConversationReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Scheme:                  mgr.GetScheme(),
		Recorder:                events.NewRecorder(mgr.GetScheme(), "parley-conversation"),
		Sessions:                e.Sessions,
		Compactor:               e.Compactor,
		Activity:                activity,
		Clock:                   clock.RealClock{},
		MaxConcurrentReconciles: workers,
		HistoryGate:             historyGate,
		AgentAPIURL:             "https://parley-session-api.parley-system.svc:8082",
		AgentCA:                 func() []byte { return e.AgentCA },
		NodeLostGrace:           3 * time.Second,
		NameTakenRetry:          NameTakenRetry,
		CheckpointRefusedRetry:  CheckpointRefusedRetry,
		Observe:                 opts.Observe,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controller.CheckpointReconciler{
		Client:                  mgr.GetClient(),
		Scheme:                  mgr.GetScheme(),
		Recorder:                events.NewRecorder(mgr.GetScheme(), "parley-checkpoint"),
		Sessions:                e.Sessions,
		MaxConcurrentReconciles: workers,
		HistoryGate:             historyGate,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.Add(activity); err != nil {
		return err
	}
	e.SessionReader = mgr.GetClient()
	api := &sessionapi.Server{
		Reader: e.SessionReader, Writer: e.Client, Sessions: e.Sessions,
		Auth: &sessionapi.Authorizer{Client: e.Client, TTL: time.Second},
	}
	e.sessionSrv = httptest.NewServer(api.Handler())
	e.SessionURL = e.sessionSrv.URL
	go func() { e.managerErr <- mgr.Start(e.Ctx) }()
	return nil
}

// Stop stops the manager, the Session API and the servers; it returns the manager's error.
func (e *Env) Stop() error {
	e.cancel()
	var errs []error
	if e.sessionSrv != nil {
		e.sessionSrv.Close()
		errs = append(errs, <-e.managerErr)
	}
	if e.S3 != nil {
		e.S3.Stop()
	}
	if e.testEnv != nil {
		errs = append(errs, e.testEnv.Stop())
	}
	return errors.Join(errs...)
}
