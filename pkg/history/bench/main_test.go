package bench

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/configmap"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/s3server"
)

const bucket = "bench"

var (
	restConfig *rest.Config
	s3srv      *s3server.Server
)

// TestMain starts both servers only when benchmarks run: `go test ./...`
// without -bench passes through quickly.
func TestMain(m *testing.M) {
	if !benchmarking() {
		os.Exit(m.Run())
	}
	var stop func()
	var err error
	ctrllog.SetLogger(logr.Discard())
	if restConfig, stop, err = kubeenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if s3srv, err = s3server.Start(s3server.Options{}); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := s3.EnsureBucket(context.Background(), s3Config()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	closeStores()
	s3srv.Stop()
	stop()
	os.Exit(code)
}

func benchmarking() bool {
	for _, arg := range os.Args[1:] {
		if len(arg) > 12 && arg[:12] == "-test.bench=" {
			return true
		}
	}
	return false
}

func s3Config() s3.Config {
	return s3.Config{
		Endpoint: "http://" + s3srv.Endpoint, Bucket: bucket, Addressing: s3.AddressingPath,
		AccessKeyID: s3srv.AccessKey, SecretAccessKey: s3srv.SecretKey,
	}
}

func kubeClient(b *testing.B) client.Client {
	c, err := client.New(restConfig, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func newConfigMapStore(b *testing.B) history.Store {
	s, err := configmap.New(configmap.Config{Client: kubeClient(b), Namespace: "default", MaxBytes: 1 << 40, MaxOpenBytes: *openBytesFlag})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func newS3Store(b *testing.B) history.Store {
	cfg := s3Config()
	cfg.MaxOpenBytes = *openBytesFlag
	s, err := s3.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
