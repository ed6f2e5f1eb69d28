package plugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/parley-dev/parley/test/support/frontproxy"
)

// serviceHost is the name the aggregator verifies the Session API's certificate for.
const serviceHost = frontproxy.ServiceHost

// recorded is a request the Session API was sent through the aggregator.
type recorded struct {
	path   string
	header http.Header
}

// recorder stands where the aggregator dials the Session API Service and notes every request
// before passing it on to the manager unchanged, over mTLS with the front-proxy certificate
// (as the aggregator would): the test sees the headers the Session API receives. It serves a
// certificate for the Service's name signed by the manager's own CA, which the APIService's
// caBundle trusts, and takes only the aggregator's front-proxy certificate.
type recorder struct {
	mu       sync.Mutex
	requests []recorded
	port     int
}

func (r *recorder) seen() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.requests...)
}

// startRecorder serves the recorder on a free port of every address until the process ends.
func startRecorder(ctx context.Context, fp *frontproxy.FrontProxy) (*recorder, error) {
	serving, err := servingFromManagerCA(ctx)
	if err != nil {
		return nil, err
	}
	manager := &url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", env.apiPort)}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(env.apiCA) {
		return nil, errors.New("the published Session API CA holds no certificate")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{
		MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: serviceHost, Certificates: []tls.Certificate{fp.Client},
	}}
	rec := &recorder{}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(manager); pr.Out.Host = serviceHost },
		Transport:     tr,
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		return nil, err
	}
	rec.port = ln.Addr().(*net.TCPAddr).Port
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			rec.mu.Lock()
			rec.requests = append(rec.requests, recorded{path: req.URL.Path, header: req.Header.Clone()})
			rec.mu.Unlock()
			proxy.ServeHTTP(w, req)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// The aggregator refuses the recorder's certificate until the manager wrote the
		// APIService's caBundle: expected, not worth a log line each.
		ErrorLog: log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{
			MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{serving},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: fp.CA, NextProtos: []string{"http/1.1"},
		},
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	return rec, nil
}

// servingFromManagerCA signs a certificate for the Service's name with the CA the manager keeps
// in its Secret (the admin may read it; the CA's name constraints permit that name).
func servingFromManagerCA(ctx context.Context) (tls.Certificate, error) {
	secret := &corev1.Secret{}
	if err := env.admin.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: "parley-session-api-ca"}, secret); err != nil {
		return tls.Certificate{}, err
	}
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return tls.Certificate{}, err
	}
	ca, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "parley-session-api"},
		DNSNames: []string{serviceHost}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &key.PublicKey, pair.PrivateKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Raw}, PrivateKey: key}, nil
}
