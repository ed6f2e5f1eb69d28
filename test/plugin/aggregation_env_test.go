package plugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// The API server's front-proxy identity, as a cluster's control plane is given one: a
// request-header CA, and the client certificate the aggregator presents to extension API
// servers, named frontProxyName.
const (
	frontProxyName = "front-proxy-client"
	apiServiceName = "v1alpha1.session.parley.dev"
	// serviceHost is the name the aggregator verifies the Session API's certificate for.
	serviceHost = "parley-session-api." + managerNamespace + ".svc"
)

// frontProxy is what the envtest API server is started with for API aggregation.
type frontProxy struct {
	caFile, certFile, keyFile string
	ca                        *x509.CertPool
	client                    tls.Certificate
}

// newFrontProxy makes the request-header CA and the aggregator's client certificate in dir.
func newFrontProxy(dir string) (*frontProxy, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "front-proxy-ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: frontProxyName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	fp := &frontProxy{
		caFile: filepath.Join(dir, "front-proxy-ca.crt"), certFile: filepath.Join(dir, "front-proxy-client.crt"),
		keyFile: filepath.Join(dir, "front-proxy-client.key"), ca: x509.NewCertPool(),
		client: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}
	fp.ca.AddCert(caCert)
	for path, block := range map[string]*pem.Block{
		fp.caFile: {Type: "CERTIFICATE", Bytes: caDER}, fp.certFile: {Type: "CERTIFICATE", Bytes: der},
		fp.keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			return nil, err
		}
	}
	return fp, nil
}

// configure starts the API server as a cluster's control plane is for API aggregation, and
// has the aggregator dial the Service's endpoints (envtest runs no kube-proxy).
func (fp *frontProxy) configure(te *crenvtest.Environment) {
	args := te.ControlPlane.GetAPIServer().Configure()
	args.Set("requestheader-client-ca-file", fp.caFile)
	args.Set("requestheader-allowed-names", frontProxyName)
	args.Set("requestheader-username-headers", "X-Remote-User")
	args.Set("requestheader-group-headers", "X-Remote-Group")
	args.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
	args.Set("proxy-client-cert-file", fp.certFile)
	args.Set("proxy-client-key-file", fp.keyFile)
	args.Set("enable-aggregator-routing", "true")
}

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
func startRecorder(ctx context.Context, fp *frontProxy) (*recorder, error) {
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
		MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: serviceHost, Certificates: []tls.Certificate{fp.client},
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
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: fp.ca, NextProtos: []string{"http/1.1"},
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

// createAPIService creates the install's APIService, as dist/install.yaml has it.
func createAPIService(ctx context.Context, root string) error {
	raw, err := os.ReadFile(filepath.Join(root, "dist", "install.yaml"))
	if err != nil {
		return err
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return err
		}
		if obj["kind"] == "APIService" {
			return env.admin.Create(ctx, &unstructured.Unstructured{Object: obj})
		}
	}
	return errors.New("dist/install.yaml has no APIService")
}

// apiService reads the install's APIService.
func apiService(ctx context.Context) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiregistration.k8s.io/v1")
	u.SetKind("APIService")
	return u, env.admin.Get(ctx, client.ObjectKey{Name: apiServiceName}, u)
}

// waitForAPIService waits until the aggregator finds the Session API available: the manager
// wrote the caBundle, and the aggregator reached the group's discovery through it.
func waitForAPIService(ctx context.Context) error {
	for {
		u, err := apiService(ctx)
		if err == nil {
			conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conditions {
				if m, ok := c.(map[string]any); ok && m["type"] == "Available" && m["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the APIService %s never became Available: %v", apiServiceName, u.Object["status"])
		case <-time.After(200 * time.Millisecond):
		}
	}
}
