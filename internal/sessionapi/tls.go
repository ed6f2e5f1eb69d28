package sessionapi

import (
	"context"
	"crypto/tls"
	"net/http"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TLSSetup configures the server's TLS before it serves.
type TLSSetup func(ctx context.Context, srv *http.Server) error

// Certificates is the Session API's TLS, kept current while the manager runs: the serving
// certificate (renewed or reloaded without a restart) and the CAs clients are told to trust
// (published in the ConfigMap CAConfigMapName, and put in agents' bundles). A manager.Runnable
// every replica runs.
type Certificates interface {
	Start(ctx context.Context) error
	NeedLeaderElection() bool
	// TLS serves the newest certificate on every handshake.
	TLS() TLSSetup
	// TrustedCA is the PEM bundle clients must trust now, nil when they need none of Parley's
	// (a certificate directory without ca.crt: a public CA).
	TrustedCA() []byte
}

// CertificatesOptions chooses where the Session API's certificates come from.
type CertificatesOptions struct {
	// CertDir, when set, holds tls.crt, tls.key and optionally ca.crt (a cert-manager
	// Certificate's Secret mounted as a volume), each reloaded when it changes.
	CertDir string
	// Hosts are the names and addresses of the certificate each replica signs for itself
	// (without CertDir).
	Hosts []string
	// Client and Namespace, when set, are where the replicas share their CA (the Secret
	// CASecretName) and publish what clients trust (the ConfigMap CAConfigMapName). Without
	// them, the CA lives in this process and is not published.
	Client    client.Client
	Namespace string
	// Clock drives renewals; tests inject a fake one.
	Clock clock.Clock
}

// NewCertificates sets up the Session API's certificates; the first serving certificate is
// ready when it returns, so a replica never serves without one.
func NewCertificates(ctx context.Context, o CertificatesOptions) (Certificates, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	var publisher *caPublisher
	if o.Client != nil && o.Namespace != "" {
		publisher = &caPublisher{client: o.Client, namespace: o.Namespace}
	}
	if o.CertDir != "" {
		return newCertDir(o.CertDir, publisher, o.Clock)
	}
	var store caStore = &memoryCAStore{}
	if publisher != nil {
		store = &secretCAStore{client: o.Client, namespace: o.Namespace}
	}
	return newSharedCA(ctx, store, publisher, o.Hosts, o.Clock)
}

// serveWith is a TLSSetup whose handshakes take the certificate get returns. It asks for a
// client certificate without requiring or verifying one: the API server's aggregator presents
// its front-proxy certificate, which FrontProxy verifies against the request-header CA before
// it believes the request's user headers; agents and direct clients present none.
func serveWith(get func(*tls.ClientHelloInfo) (*tls.Certificate, error)) TLSSetup {
	return func(_ context.Context, srv *http.Server) error {
		srv.TLSConfig = &tls.Config{
			MinVersion: tls.VersionTLS12, GetCertificate: get, NextProtos: []string{"http/1.1"},
			ClientAuth: tls.RequestClientCert,
		}
		return nil
	}
}

// waitUntil returns a channel that fires at t on clk (at once when t has passed).
func waitUntil(clk clock.Clock, t time.Time) <-chan time.Time {
	return clk.After(t.Sub(clk.Now()))
}
