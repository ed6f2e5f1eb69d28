// Package kubeenv starts a real kube-apiserver and etcd (envtest) for the
// ConfigMap backend's tests and benchmarks, and hands its address to child
// processes through the environment.
package kubeenv

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/test/support/repopath"
)

// envConfig carries the API server's address and credentials to children.
const envConfig = "PARLEY_HISTORY_KUBECONFIG"

// Start starts the control plane. The binaries come from KUBEBUILDER_ASSETS
// (set by `make test`) or from bin/k8s/envtest of the repository.
func Start() (*rest.Config, func(), error) {
	dir, err := AssetsDir()
	if err != nil {
		return nil, nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("start envtest from %s: %w", dir, err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // the store is the thing measured, not client-side throttling
	return cfg, func() { _ = env.Stop() }, nil
}

// StartWithCRDs starts the control plane with Parley's CRDs installed (config/crd/bases of the
// repository), each configure applied to the environment first (API server flags). The client
// config is envtest's own: the caller sets its rates.
func StartWithCRDs(configure ...func(*envtest.Environment)) (*rest.Config, func(), error) {
	root, err := repopath.Root()
	if err != nil {
		return nil, nil, err
	}
	dir, err := AssetsDir()
	if err != nil {
		return nil, nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: dir,
	}
	for _, c := range configure {
		c(env)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting envtest from %s: %w", dir, err)
	}
	return cfg, func() { _ = env.Stop() }, nil
}

// BenchmarkMain is a TestMain for benchmarks that need a control plane: start runs only when
// benchmarks run (-test.bench set), so `go test ./...` passes through without one. The flags
// are parsed first: start may read the package's own (-args …).
func BenchmarkMain(m *testing.M, start func() (stop func(), err error)) {
	flag.Parse()
	if !benchmarking() {
		os.Exit(m.Run())
	}
	stop, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// benchmarking reports whether -test.bench names benchmarks, in any of the forms the flag
// package accepts (-test.bench=X, -test.bench X, with one dash or two).
func benchmarking() bool {
	args := os.Args[1:]
	for i, arg := range args {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
		if name != "test.bench" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		return value != ""
	}
	return false
}

// StartManager runs mgr until ctx ends and waits for its cache to sync (a minute at most), or
// for it to stop first.
func StartManager(ctx context.Context, mgr manager.Manager) error {
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }()
	synced := make(chan bool, 1)
	go func() { synced <- mgr.GetCache().WaitForCacheSync(ctx) }()
	select {
	case err := <-errc:
		return fmt.Errorf("the manager stopped: %w", err)
	case ok := <-synced:
		if !ok {
			return errors.New("the manager's cache did not sync")
		}
	case <-time.After(time.Minute):
		return errors.New("the manager's cache did not sync in a minute")
	}
	return nil
}

// AssetsDir is the folder holding etcd and kube-apiserver: KUBEBUILDER_ASSETS, or bin/k8s/envtest
// of the repository; its error says what to run when neither has them.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s holds no kube-apiserver; run `make test`, which builds bin/k8s/envtest and points KUBEBUILDER_ASSETS at it", dir)
		}
		return dir, nil
	}
	if root, err := repopath.Root(); err == nil {
		dir := filepath.Join(root, "bin", "k8s", "envtest")
		if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("no kube-apiserver for envtest; run `make test`, which builds bin/k8s/envtest and sets KUBEBUILDER_ASSETS " +
		"(or run `make envtest` and set KUBEBUILDER_ASSETS=$PWD/bin/k8s/envtest)")
}

type wireConfig struct {
	Host string `json:"host"`
	CA   []byte `json:"ca"`
	Cert []byte `json:"cert"`
	Key  []byte `json:"key"`
}

// Env returns the environment a child process needs to reach cfg's server.
func Env(cfg *rest.Config) []string {
	b, _ := json.Marshal(wireConfig{Host: cfg.Host, CA: cfg.CAData, Cert: cfg.CertData, Key: cfg.KeyData})
	return []string{envConfig + "=" + base64.StdEncoding.EncodeToString(b)}
}

// FromEnv rebuilds the config a parent passed with Env.
func FromEnv() (*rest.Config, error) {
	raw, err := base64.StdEncoding.DecodeString(os.Getenv(envConfig))
	if err != nil {
		return nil, err
	}
	var w wireConfig
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("%s: %w", envConfig, err)
	}
	return &rest.Config{
		Host:            w.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: w.CA, CertData: w.Cert, KeyData: w.Key},
		QPS:             -1,
	}, nil
}

// WriteKubeconfig writes a kubeconfig for cfg's server, for a child process that reads
// KUBECONFIG (the manager binary, kubectl): with token, a bearer-token user; without, cfg's
// client certificate.
func WriteKubeconfig(path string, cfg *rest.Config, token string) error {
	enc := base64.StdEncoding.EncodeToString
	user := "    token: " + token + "\n"
	if token == "" {
		if len(cfg.CertData) == 0 || len(cfg.KeyData) == 0 {
			return errors.New("the envtest config carries no client certificate")
		}
		user = fmt.Sprintf("    client-certificate-data: %s\n    client-key-data: %s\n", enc(cfg.CertData), enc(cfg.KeyData))
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: envtest
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: user
  user:
%scontexts:
- name: envtest
  context:
    cluster: envtest
    user: user
current-context: envtest
`, cfg.Host, enc(cfg.CAData), user)
	return os.WriteFile(path, []byte(kc), 0o600)
}

// InstallCRDs installs the CRDs of the tree at root (config/crd/bases) and waits until they
// are served.
func InstallCRDs(cfg *rest.Config, root string) error {
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true,
	})
	return err
}

// AddToScheme adds the built-in kinds and Parley's to scheme.
func AddToScheme(scheme *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, parleyv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	return nil
}

// NewScheme knows the built-in kinds and Parley's.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	return scheme, AddToScheme(scheme)
}

// NewClient is a client of cfg's server with NewScheme's kinds, and that scheme.
func NewClient(cfg *rest.Config) (client.Client, *runtime.Scheme, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, scheme, err
}
