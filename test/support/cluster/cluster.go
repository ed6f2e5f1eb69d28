// Package cluster runs what a test of the manager binary needs around it: the binary built
// from the repository, envtest (kube-apiserver and etcd) with Parley's CRDs, and versitygw with
// a bucket; it sets up namespaces as the teams using Parley have them and waits on
// Conversations.
package cluster

import (
	"context"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/managerproc"
	"github.com/parley-dev/parley/test/support/repopath"
	"github.com/parley-dev/parley/test/support/s3server"
)

// Cluster is a running envtest and S3 server, and the manager binary to run against them.
type Cluster struct {
	// Bin is the manager binary; Kubeconfig lets it reach the API server.
	Bin, Kubeconfig string
	Config          *rest.Config
	Client          client.Client
	S3              *s3server.Server
	// Store reaches Bucket on S3 (path-style, plain HTTP).
	Store s3.Config
}

// Start builds ./cmd/manager into dir, starts envtest with the CRDs and versitygw holding
// bucket, and writes dir/kubeconfig. Everything stops when t ends.
func Start(ctx context.Context, t testing.TB, dir, bucket string) *Cluster {
	t.Helper()
	return StartInstalling(ctx, t, dir, bucket, kubeenv.InstallCRDs)
}

// StartInstalling is Start with install putting Parley on the API server instead of the CRDs
// of config/crd/bases (root is the repository).
func StartInstalling(ctx context.Context, t testing.TB, dir, bucket string, install func(cfg *rest.Config, root string) error) *Cluster {
	t.Helper()
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	cl := &Cluster{Kubeconfig: filepath.Join(dir, "kubeconfig")}
	if cl.Bin, err = managerproc.Build(root, dir); err != nil {
		t.Fatal(err)
	}
	cfg, stopEnv, err := kubeenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopEnv)
	cl.Config = cfg
	if err := install(cfg, root); err != nil {
		t.Fatal(err)
	}
	if cl.Client, _, err = kubeenv.NewClient(cfg); err != nil {
		t.Fatal(err)
	}
	if cl.S3, err = s3server.Start(s3server.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.S3.Stop)
	cl.Store = s3.Config{
		Endpoint: "http://" + cl.S3.Endpoint, Bucket: bucket, Addressing: s3.AddressingPath,
		AccessKeyID: cl.S3.AccessKey, SecretAccessKey: cl.S3.SecretKey,
	}
	if err := s3.EnsureBucket(ctx, cl.Store); err != nil {
		t.Fatal(err)
	}
	if err := kubeenv.WriteKubeconfig(cl.Kubeconfig, cfg, ""); err != nil {
		t.Fatal(err)
	}
	return cl
}
