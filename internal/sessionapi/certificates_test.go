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
	"math/big"
	"net"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var (
	testHosts = []string{"parley-session-api.parley-system.svc", "parley-session-api.parley-system.svc.cluster.local", "127.0.0.1"}
	epoch     = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
)

// served is the certificate a handshake gets now.
func served(t *testing.T, certs Certificates) *x509.Certificate {
	t.Helper()
	srv := &http.Server{}
	if err := certs.TLS()(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	c, err := srv.TLSConfig.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// verifyAt checks leaf for every test host through the CAs of bundle, as a client would at now.
func verifyAt(leaf *x509.Certificate, bundle []byte, now time.Time) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	for _, h := range testHosts {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: h, CurrentTime: now}); err != nil {
			return err
		}
	}
	return nil
}

// TestServingCertificateRenewedBeforeExpiry runs the renewal loop on a fake clock for a whole
// CA lifetime, a day at a time: at every step the certificate served is valid and trusted by
// what is published, and it was renewed at two thirds of its life, not at its end.
func TestServingCertificateRenewedBeforeExpiry(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	certs, err := NewCertificates(context.Background(), CertificatesOptions{Hosts: testHosts, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = certs.Start(ctx) }()

	first := served(t, certs)
	if life := first.NotAfter.Sub(first.NotBefore); life != ServingLifetime+backdate {
		t.Fatalf("serving certificate valid %v, want %v", life, ServingLifetime+backdate)
	}
	renewals := 0
	last := first
	for day := 1; day <= int(CALifetime/(24*time.Hour))+60; day++ {
		waitForWaiter(t, clk)
		clk.Step(24 * time.Hour)
		now := clk.Now()
		var leaf *x509.Certificate
		deadline := time.Now().Add(5 * time.Second)
		for {
			// The loop renews after the step: wait until it has caught up with the clock.
			leaf = served(t, certs)
			if now.Before(leaf.NotBefore.Add(backdate).Add(ServingLifetime*2/3)) || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err := verifyAt(leaf, certs.TrustedCA(), now); err != nil {
			t.Fatalf("day %d: the served certificate is not trusted through the published CAs: %v", day, err)
		}
		if leaf.SerialNumber.Cmp(last.SerialNumber) != 0 {
			if age := now.Sub(last.NotBefore.Add(backdate)); age > ServingLifetime*2/3+24*time.Hour {
				t.Errorf("day %d: renewed at age %v, later than two thirds of %v", day, age, ServingLifetime)
			}
			renewals++
			last = leaf
		}
	}
	if renewals < 30 {
		t.Errorf("%d renewals over a CA lifetime, want one every 20 days", renewals)
	}
}

func waitForWaiter(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the renewal loop does not wait on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCANameConstraints: the CA may sign only for the hosts it was made for. A certificate its
// key signs for another name or address fails verification, whatever name the client checks.
func TestCANameConstraints(t *testing.T) {
	for name, hosts := range map[string][]string{
		"names and an address": testHosts,
		"names only":           testHosts[:2],
	} {
		t.Run(name, func(t *testing.T) {
			certPEM, keyPEM, err := NewCA(epoch, hosts)
			if err != nil {
				t.Fatal(err)
			}
			ca, err := parseSigner(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			if life := ca.cert.NotAfter.Sub(epoch); life != CALifetime {
				t.Errorf("CA valid %v from now, want %v", life, CALifetime)
			}
			if !ca.cert.PermittedDNSDomainsCritical || !ca.cert.MaxPathLenZero {
				t.Error("the name constraints are not critical, or the CA may sign other CAs")
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(certPEM)
			opts := x509.VerifyOptions{Roots: pool, CurrentTime: epoch}

			var names []string
			var ips []net.IP
			for _, h := range hosts {
				if ip := net.ParseIP(h); ip != nil {
					ips = append(ips, ip)
				} else {
					names = append(names, h)
				}
			}
			good := signLeaf(t, ca, names, ips)
			if _, err := good.Verify(opts); err != nil {
				t.Errorf("a certificate for the CA's own hosts: %v", err)
			}
			for leafName, leaf := range map[string]*x509.Certificate{
				"another DNS name":            signLeaf(t, ca, []string{"evil.example.com"}, nil),
				"its hosts and another name":  signLeaf(t, ca, append([]string{"kubernetes.default.svc"}, names...), ips),
				"a parent domain of its host": signLeaf(t, ca, []string{"parley-system.svc"}, nil),
				"another IP address":          signLeaf(t, ca, nil, []net.IP{net.ParseIP("10.0.0.1")}),
				"an IPv6 address":             signLeaf(t, ca, nil, []net.IP{net.ParseIP("fd00::1")}),
				"no name but the common name": signLeaf(t, ca, nil, nil),
			} {
				if leafName == "no name but the common name" {
					opts := opts
					opts.DNSName = "evil.example.com"
					if _, err := leaf.Verify(opts); err == nil {
						t.Errorf("%s: verified", leafName)
					}
					continue
				}
				if _, err := leaf.Verify(opts); err == nil {
					t.Errorf("%s: a certificate the CA key signed for it verified against the CA", leafName)
				}
			}
		})
	}
}

// signLeaf signs a serving certificate for names and ips with ca's key, as whoever took the
// key could.
func signLeaf(t *testing.T, ca signer, names []string, ips []net.IP) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "evil.example.com"},
		NotBefore: epoch.Add(-time.Hour), NotAfter: epoch.Add(time.Hour),
		DNSNames: names, IPAddresses: ips, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// TestCARotationKeepsClientsTrusting walks the shared CA through a rotation on a fake clock: a
// client that took the published CAs any time after the next CA appeared trusts every serving
// certificate until the one after; the serving certificate moves to the new CA at promotion;
// the former CA is published until it expires.
func TestCARotationKeepsClientsTrusting(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	store := &memoryCAStore{}
	c, err := newSharedCA(context.Background(), store, nil, testHosts, clk)
	if err != nil {
		t.Fatal(err)
	}
	original := store.set.current.cert
	advance := func(to time.Time) {
		t.Helper()
		clk.SetTime(to)
		if _, err := c.refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	bundleSize := func() int {
		certs, err := parseCertificates(c.TrustedCA())
		if err != nil {
			t.Fatal(err)
		}
		return len(certs)
	}

	advance(rotateAt(original).Add(-time.Minute))
	if store.set.next != nil || bundleSize() != 1 {
		t.Fatal("a next CA before two thirds of the CA's life")
	}
	advance(rotateAt(original))
	if store.set.next == nil || bundleSize() != 2 {
		t.Fatal("no next CA published at two thirds of the CA's life")
	}
	early := c.TrustedCA() // an agent started now
	if err := verifyAt(served(t, c), early, clk.Now()); err != nil {
		t.Fatalf("serving under the signing CA: %v", err)
	}
	next := store.set.next.cert

	advance(promoteAt(next).Add(-time.Minute))
	if !store.set.current.cert.Equal(original) {
		t.Fatal("the next CA signs before the overlap ends")
	}
	advance(promoteAt(next))
	if !store.set.current.cert.Equal(next) || store.set.next != nil {
		t.Fatal("the next CA does not sign after the overlap")
	}
	leaf := served(t, c)
	if err := leaf.CheckSignatureFrom(next); err != nil {
		t.Fatalf("the serving certificate was not renewed under the new CA at once: %v", err)
	}
	if err := verifyAt(leaf, early, clk.Now()); err != nil {
		t.Errorf("a client holding the CAs published at the rotation's start: %v", err)
	}
	if bundleSize() != 2 {
		t.Error("the former CA is no longer published before it expires")
	}
	advance(original.NotAfter)
	if bundleSize() != 1 || len(store.set.previous) != 0 {
		t.Error("an expired CA is still published")
	}
}

// TestCASecretFromAnOlderVersion: a Secret holding a ten-year CA without name constraints
// (what earlier managers wrote) keeps signing, so agents that trust it keep working, and a
// constrained CA is published beside it at once to take over after the overlap.
func TestCASecretFromAnOlderVersion(t *testing.T) {
	oldCA := legacyCA(t)
	s, err := decodeCASecret(map[string][]byte{corev1.TLSCertKey: oldCA.certPEM, corev1.TLSPrivateKeyKey: oldCA.keyPEM})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(epoch)
	store := &memoryCAStore{set: s, found: true}
	c, err := newSharedCA(context.Background(), store, nil, testHosts, clk)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyAt(served(t, c), oldCA.certPEM, clk.Now()); err != nil {
		t.Fatalf("a client trusting the old CA: %v", err)
	}
	if store.set.next == nil || !constrained(store.set.next.cert) {
		t.Fatal("no constrained CA published beside the old one")
	}
	decoded, err := decodeCASecret(encodeCASecret(store.set))
	if err != nil || decoded.next == nil || !decoded.current.cert.Equal(oldCA.cert) {
		t.Fatalf("the rotated set does not survive the Secret: %v", err)
	}
}

// legacyCA is a CA as managers before name constraints made it: ten years, no constraints.
func legacyCA(t *testing.T) signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "parley-session-api-ca"},
		NotBefore: epoch.Add(-time.Hour), NotAfter: epoch.AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseSigner(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDecideCAReplacesACAThatCannotServe: a renamed Service gets a CA that permits its new
// names at once, and the old names too, so replicas still on the old names do not replace it
// back during the rolling update.
func TestDecideCAReplacesACAThatCannotServe(t *testing.T) {
	cur, err := newSigner(epoch, []string{"old.ns.svc"})
	if err != nil {
		t.Fatal(err)
	}
	s := caSet{current: cur}
	renamed := []string{"new.ns.svc"}
	if got := decideCA(epoch, s, renamed); got != caReplace {
		t.Fatalf("decideCA = %v, want replace", got)
	}
	s, err = applyCA(epoch, s, caReplace, renamed)
	if err != nil {
		t.Fatal(err)
	}
	for _, hosts := range [][]string{renamed, {"old.ns.svc"}} {
		if got := decideCA(epoch, s, hosts); got != caKeep {
			t.Errorf("hosts %v after the replacement: decideCA = %v, want keep", hosts, got)
		}
	}
}
