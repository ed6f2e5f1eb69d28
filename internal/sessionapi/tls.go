package sessionapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// TLSSetup configures the server's TLS before it serves.
type TLSSetup func(ctx context.Context, srv *http.Server) error

// CertDirTLS serves the certificate in dir (tls.crt, tls.key: a cert-manager Certificate's
// Secret mounted as a volume), reloaded when the files change.
func CertDirTLS(dir string) (TLSSetup, error) {
	w, err := certwatcher.New(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("session API certificate in %s: %w", dir, err)
	}
	return func(ctx context.Context, srv *http.Server) error {
		go func() { _ = w.Start(ctx) }()
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: w.GetCertificate, NextProtos: []string{"http/1.1"}}
		return nil
	}, nil
}

// SelfSignedTLS serves a certificate made at start for hosts, signed by a fresh CA whose PEM it
// returns so the caller can publish it (clients trust it through PARLEY_CA_FILE).
func SelfSignedTLS(hosts []string) (TLSSetup, []byte, error) {
	caPEM, caKeyPEM, err := NewCA()
	if err != nil {
		return nil, nil, err
	}
	setup, err := ServingTLS(caPEM, caKeyPEM, hosts)
	return setup, caPEM, err
}

// NewCA makes a CA for the Session API: a certificate and its key, PEM, valid ten years.
func NewCA() (certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "parley-session-api-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// ServingTLS serves a certificate made at start for hosts and signed by the CA given (PEM):
// every replica signs its own with the shared CA, so a client that trusts the CA trusts them all.
func ServingTLS(caPEM, caKeyPEM []byte, hosts []string) (TLSSetup, error) {
	caPair, err := tls.X509KeyPair(caPEM, caKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("reading the Session API CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caPair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("reading the Session API CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "parley-session-api"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caPair.PrivateKey)
	if err != nil {
		return nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{der, ca.Raw}, PrivateKey: key}
	return func(_ context.Context, srv *http.Server) error {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
		return nil
	}, nil
}
