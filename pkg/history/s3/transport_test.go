package s3_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/test/support/s3server"
)

// roundTrip appends and reads back through a store built from cfg.
func roundTrip(t *testing.T, cfg s3.Config, n int) error {
	t.Helper()
	ctx := context.Background()
	if err := s3.EnsureBucket(ctx, cfg); err != nil {
		return err
	}
	s, err := s3.New(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	h, err := s.Open(ctx, "round-trip", history.OpenOptions{Create: true})
	if err != nil {
		return err
	}
	for i := range n {
		id := string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		if _, err := h.Append(ctx, []history.Record{{ID: id, Data: []byte(`"` + id + `"`)}}); err != nil {
			return err
		}
	}
	page, err := h.Read(ctx, history.ReadOptions{})
	if err != nil {
		return err
	}
	if len(page.Entries) != n {
		t.Fatalf("read %d entries, want %d", len(page.Entries), n)
	}
	return nil
}

func TestTLSWithCustomCA(t *testing.T) {
	srv, err := s3server.Start(s3server.Options{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	cfg := s3.Config{
		Endpoint: "https://" + srv.Endpoint, Bucket: "tls", Addressing: s3.AddressingPath,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, MaxRetries: 1,
	}
	if err := roundTrip(t, cfg, 3); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA bundle: %v, want a certificate error", err)
	}
	cfg.CABundle = srv.CAPEM
	if err := roundTrip(t, cfg, 40); err != nil {
		t.Fatalf("with the CA bundle: %v", err)
	}
}

func TestVirtualHostAddressing(t *testing.T) {
	srv, err := s3server.Start(s3server.Options{VirtualDomain: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	_, port, _ := net.SplitHostPort(srv.Endpoint)
	var hosts hostSet
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		hosts.add(host)
		var d net.Dialer
		return d.DialContext(ctx, network, "127.0.0.1:"+port) // no DNS here for *.localhost
	}
	cfg := s3.WithDial(s3.Config{
		Endpoint: "http://localhost:" + port, Bucket: "vhost", Addressing: s3.AddressingVirtualHost,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey,
	}, dial)
	if err := roundTrip(t, cfg, 40); err != nil {
		t.Fatal(err)
	}
	if !hosts.has("vhost.localhost") {
		t.Fatalf("requests went to %v, want the bucket in the host name", hosts.list())
	}
}

// TestRetriesAndLostResponses puts a proxy in front of the real server that
// answers 503 to every third write, after forwarding it or before: the
// client must retry, and a write that did land but whose answer was lost
// must neither be lost nor duplicated.
func TestRetriesAndLostResponses(t *testing.T) {
	target, _ := url.Parse("http://" + server.Endpoint)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var writes atomic.Int64
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			proxy.ServeHTTP(w, r)
			return
		}
		switch writes.Add(1) % 6 {
		case 2: // fail before the server sees it
			_, _ = io.Copy(io.Discard, r.Body)
			http.Error(w, "<Error><Code>SlowDown</Code></Error>", http.StatusServiceUnavailable)
		case 5: // the server applies it, the answer is lost
			proxy.ServeHTTP(httptest.NewRecorder(), r)
			http.Error(w, "<Error><Code>InternalError</Code></Error>", http.StatusInternalServerError)
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	defer flaky.Close()
	cfg := configFor(strings.TrimPrefix(flaky.URL, "http://"), newBucket(t), 0)
	ctx := context.Background()
	s, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	h, err := s.Open(ctx, fmt.Sprintf("flaky-%d", time.Now().UnixNano()), history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	acks := map[string]uint64{}
	for i := range 30 {
		id := "r" + strings.Repeat("i", i)
		seqs, err := h.Append(ctx, []history.Record{{ID: id, Data: []byte(`{}`)}})
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		acks[id] = seqs[0]
	}
	page, err := h.Read(ctx, history.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != len(acks) {
		t.Fatalf("%d entries for %d acknowledged appends", len(page.Entries), len(acks))
	}
	for i, e := range page.Entries {
		if e.Seq != uint64(i+1) || acks[e.ID] != e.Seq {
			t.Fatalf("entry %d: %s at %d, acknowledged at %d", i, e.ID, e.Seq, acks[e.ID])
		}
	}
	if writes.Load() < 30 {
		t.Fatalf("only %d writes went through the proxy", writes.Load())
	}
}

func TestCanceledAppend(t *testing.T) {
	s, err := s3.New(configFor(server.Endpoint, newBucket(t), 0))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	h, err := s.Open(ctx, "canceled", history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := h.Append(ctx, []history.Record{{ID: "a", Data: []byte("{}")}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("append: %v, want context.Canceled", err)
	}
	if _, err := h.Checkpoints(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("list: %v, want context.Canceled", err)
	}
}

func TestConfigFromSecret(t *testing.T) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: "agents"},
		Data: map[string][]byte{
			s3.SecretAccessKeyID: []byte("id"), s3.SecretSecretAccessKey: []byte("key"), s3.SecretCABundle: []byte("pem"),
		},
	}
	cfg, err := s3.ConfigFromSecret(secret, s3.Config{Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AccessKeyID != "id" || cfg.SecretAccessKey != "key" || string(cfg.CABundle) != "pem" || cfg.Bucket != "b" {
		t.Fatalf("config %+v", cfg)
	}
	delete(secret.Data, s3.SecretSecretAccessKey)
	if _, err := s3.ConfigFromSecret(secret, s3.Config{}); err == nil || !strings.Contains(err.Error(), s3.SecretSecretAccessKey) {
		t.Fatalf("secret without a secret key: %v", err)
	}
}
