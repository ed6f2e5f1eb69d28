package s3_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/historytest"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/test/support/s3server"
)

// Environment of child processes: where the parent's server is.
const envEndpoint, envBucket = "PARLEY_HISTORY_S3_ENDPOINT", "PARLEY_HISTORY_S3_BUCKET"

var server *s3server.Server

func TestMain(m *testing.M) {
	historytest.RunChildIfRequested(func() (history.Store, error) {
		return s3.New(configFor(os.Getenv(envEndpoint), os.Getenv(envBucket), 0))
	})
	var err error
	if server, err = s3server.Start(s3server.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	server.Stop()
	os.Exit(code)
}

func configFor(endpoint, bucket string, maxBytes int64) s3.Config {
	return s3.Config{
		Endpoint: "http://" + endpoint, Bucket: bucket, Prefix: "parley/histories",
		AccessKeyID: "parleytest", SecretAccessKey: "parleytestsecret",
		Addressing: s3.AddressingPath, MaxBytes: maxBytes,
	}
}

func newBucket(t *testing.T) string {
	t.Helper()
	bucket := "t-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(bucket) > 60 {
		bucket = bucket[:60]
	}
	if err := s3.EnsureBucket(context.Background(), configFor(server.Endpoint, bucket, 0)); err != nil {
		t.Fatal(err)
	}
	return bucket
}

func TestConformance(t *testing.T) {
	t.Run("plain", func(t *testing.T) { conformance(t, false) })
	// Child processes write plain segments, readers here compressed ones: both mix.
	t.Run("compressed", func(t *testing.T) { conformance(t, true) })
}

func conformance(t *testing.T, compressed bool) {
	bucket := newBucket(t)
	mustStore := func(t *testing.T, maxBytes int64) history.Store {
		cfg := configFor(server.Endpoint, bucket, maxBytes)
		cfg.CompressSegments = compressed
		s, err := s3.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	historytest.Run(t, historytest.Harness{
		New:          func(t *testing.T) history.Store { return mustStore(t, 0) },
		NewWithLimit: mustStore,
		ChildEnv:     []string{envEndpoint + "=" + server.Endpoint, envBucket + "=" + bucket},
		LargeRecords: true,
	})
}
