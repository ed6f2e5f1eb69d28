// Package admission attacks the install as shipped: the admission policy and the roles of
// dist/install.yaml on a real kube-apiserver (envtest, RBAC authorization), with people who hold
// only the roles Parley gives them, and the Conversation controller running. Each spec is an
// author trying to make the manager do what they could not do directly.
package admission

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/controller"
	"github.com/parley-dev/parley/internal/eventsink"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/repopath"
)

var (
	ctx     context.Context
	cancel  context.CancelFunc
	testEnv *crenvtest.Environment
	// admin is envtest's system:masters client.
	admin client.Client
)

func TestAdmission(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Admission Suite (envtest, the install's policy and roles)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())
	Expect(parleyv1alpha1.AddToScheme(scheme.Scheme)).To(Succeed())

	root, err := repopath.Root()
	Expect(err).NotTo(HaveOccurred())
	assets, err := kubeenv.AssetsDir()
	Expect(err).NotTo(HaveOccurred())
	// envtest's API server authorizes with RBAC unless told otherwise; the policy's authorizer
	// checks need it, so the suite says so instead of relying on the default.
	testEnv = &crenvtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	testEnv.ControlPlane.GetAPIServer().Configure().Set("authorization-mode", "RBAC")
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	admin, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())

	installFromDist(filepath.Join(root, "dist", "install.yaml"))
	startManager(cfg)
	waitForPolicy()
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// installFromDist creates what the specs rely on from the installer as shipped: the admission
// policy and its binding, and the ClusterRoles for people and agents.
func installFromDist(path string) {
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	kinds := map[string]int{}
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(doc, &u.Object)).To(Succeed())
		switch u.GetKind() {
		case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ClusterRole":
			Expect(admin.Create(ctx, u)).To(Succeed(), "creating %s %s from dist/install.yaml", u.GetKind(), u.GetName())
			kinds[u.GetKind()]++
		}
	}
	Expect(kinds).To(HaveKeyWithValue("ValidatingAdmissionPolicy", 1))
	Expect(kinds).To(HaveKeyWithValue("ValidatingAdmissionPolicyBinding", 1))
}

// startManager runs the Conversation and Checkpoint controllers as cmd/manager wires them, with
// ConfigMap histories only.
func startManager(cfg *rest.Config) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   controller.CacheOptions(),
	})
	Expect(err).NotTo(HaveOccurred())
	stores := &historystore.Stores{ConfigMaps: admin, Secrets: mgr.GetAPIReader(), SecretTTL: time.Second}
	Expect(mgr.Add(stores)).To(Succeed())
	Expect(controller.SetupIndexes(ctx, mgr)).To(Succeed())
	events, err := eventsink.Start(ctx, cfg, mgr.GetHTTPClient(), eventsink.DefaultInFlight)
	Expect(err).NotTo(HaveOccurred())
	sessions := &session.Sessions{Stores: stores, Views: &journal.Views{}}
	Expect((&controller.ConversationReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
		Recorder: events.NewRecorder(mgr.GetScheme(), "parley-conversation"),
		Sessions: sessions, Clock: clock.RealClock{}, MaxConcurrentReconciles: 2,
		AgentAPIURL: "https://parley-session-api.parley-system.svc:8082",
	}).SetupWithManager(mgr)).To(Succeed())
	Expect((&controller.CheckpointReconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(),
		Recorder: events.NewRecorder(mgr.GetScheme(), "parley-checkpoint"),
		Sessions: sessions,
	}).SetupWithManager(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
}

// waitForPolicy waits until the API server enforces the policy: it compiles a new policy and
// its binding a moment after they are created, and admits everything until then.
func waitForPolicy() {
	ns := newNamespace()
	probe := newUser(ns, "probe", editorRole)
	conv := withAgent(historyOnly(ns, "probe"), "")
	Eventually(func() error {
		return probe.Create(ctx, conv.DeepCopy(), client.DryRunAll)
	}).Should(MatchError(ContainSubstring("may not create pods")))
}
