package sessionapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
)

// TestServingTLSIsTrustedThroughTheCA: two replicas' certificates, each made at start from the
// shared CA, are both trusted by a client that holds only the CA, for the names asked for.
func TestServingTLSIsTrustedThroughTheCA(t *testing.T) {
	caPEM, keyPEM, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA PEM does not parse")
	}
	for replica := range 2 {
		setup, err := ServingTLS(caPEM, keyPEM, []string{"parley-session-api.parley-system.svc", "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{}
		if err := setup(context.Background(), srv); err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(srv.TLSConfig.Certificates[0].Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"parley-session-api.parley-system.svc", "127.0.0.1"} {
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err != nil {
				t.Errorf("replica %d, %s: %v", replica, name, err)
			}
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "other.example"}); err == nil {
			t.Errorf("replica %d: the certificate is valid for a name it was not made for", replica)
		}
	}
	_, otherKey, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ServingTLS(caPEM, otherKey, nil); err == nil {
		t.Error("a CA certificate with another CA's key was accepted")
	}
	if _, err := tls.X509KeyPair(caPEM, keyPEM); err != nil {
		t.Errorf("NewCA's certificate and key do not pair: %v", err)
	}
}
