package envtest

import (
	"bytes"
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
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/parley-dev/parley/internal/sessionapi"
	"github.com/parley-dev/parley/test/support/operatorenv"
)

var _ = Describe("Session API certificates", func() {
	hosts := []string{"parley-session-api.parley-system.svc", "127.0.0.1"}

	newNamespace := func() string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "certs-" + operatorenv.RandSuffix()}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		return ns.Name
	}
	published := func(ns string) func(g Gomega) string {
		return func(g Gomega) string {
			cm := &corev1.ConfigMap{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: sessionapi.CAConfigMapName}, cm)).To(Succeed())
			return cm.Data[sessionapi.CAConfigMapKey]
		}
	}

	It("shares one CA between replicas that start together and publishes its certificate, not its key", func() {
		ns := newNamespace()
		results := make(chan []byte, 4)
		for range 4 {
			go func() {
				defer GinkgoRecover()
				certs, err := sessionapi.NewCertificates(ctx, sessionapi.CertificatesOptions{Hosts: hosts, Client: k8sClient, Namespace: ns})
				Expect(err).NotTo(HaveOccurred())
				results <- certs.TrustedCA()
			}()
		}
		first := <-results
		for range 3 {
			Expect(<-results).To(Equal(first), "every replica signs with the same CA")
		}
		secret := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: sessionapi.CASecretName}, secret)).To(Succeed())
		Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
		Expect(string(secret.Data[corev1.TLSCertKey])).To(Equal(string(first)))
		Expect(published(ns)(Default)).To(Equal(string(first)))
		Expect(published(ns)(Default)).NotTo(ContainSubstring("PRIVATE KEY"))
	})

	It("keeps signing with a CA Secret an older version wrote, and publishes its successor beside it", func() {
		ns := newNamespace()
		old := newTestCA(time.Now().AddDate(10, 0, 0))
		Expect(k8sClient.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sessionapi.CASecretName},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: old.certPEM, corev1.TLSPrivateKeyKey: old.keyPEM},
		})).To(Succeed())
		certs, err := sessionapi.NewCertificates(ctx, sessionapi.CertificatesOptions{Hosts: hosts, Client: k8sClient, Namespace: ns})
		Expect(err).NotTo(HaveOccurred())

		addr := serveTLS(certs)
		Expect(getOver(addr, old.certPEM)).To(Succeed(), "an agent that trusts the old CA still trusts the API")
		bundle := published(ns)(Default)
		Expect(bundle).To(HavePrefix(string(old.certPEM)))
		Expect(bytes.Count([]byte(bundle), []byte("BEGIN CERTIFICATE"))).To(Equal(2), "the next, name-constrained CA is published beside it")
	})

	It("follows a certificate folder: a renewed certificate and CA are served, published and trusted by a new client", func() {
		ns := newNamespace()
		dir := GinkgoT().TempDir()
		ca1 := newTestCA(time.Now().AddDate(1, 0, 0))
		ca1.writeServing(dir)
		clk := clocktesting.NewFakeClock(time.Now())
		certs, err := sessionapi.NewCertificates(ctx, sessionapi.CertificatesOptions{CertDir: dir, Client: k8sClient, Namespace: ns, Clock: clk})
		Expect(err).NotTo(HaveOccurred())
		runCtx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go func() { _ = certs.Start(runCtx) }()
		addr := serveTLS(certs)

		Eventually(published(ns)).Should(Equal(string(ca1.certPEM)))
		Expect(getOver(addr, []byte(published(ns)(Default)))).To(Succeed())

		By("cert-manager renewing the serving certificate under the same CA: a running client keeps trusting it")
		before := servedSerial(addr)
		ca1.writeServing(dir)
		Eventually(func() *big.Int { return servedSerial(addr) }).ShouldNot(Equal(before))
		Expect(getOver(addr, ca1.certPEM)).To(Succeed())

		By("cert-manager renewing the CA itself: the new CA is published and given to agents")
		ca2 := newTestCA(time.Now().AddDate(1, 0, 0))
		ca2.writeServing(dir)
		Eventually(func(g Gomega) string {
			clk.Step(time.Minute)
			return published(ns)(g)
		}).Should(Equal(string(ca2.certPEM)))
		Expect(certs.TrustedCA()).To(Equal(ca2.certPEM), "what agents are given follows ca.crt")
		Eventually(func() error { return getOver(addr, []byte(published(ns)(Default))) }).Should(Succeed(),
			"a new client trusting the newly published CA trusts the renewed certificate")
		Expect(getOver(addr, ca1.certPEM)).NotTo(Succeed())
	})
})

// testCA is a CA of the kind cert-manager's CA Issuer signs with.
type testCA struct {
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
	certPEM, keyPEM []byte
}

func newTestCA(notAfter time.Time) testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	cert, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	return testCA{
		cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

// writeServing writes what a cert-manager Certificate's Secret mounts: tls.crt, tls.key for
// 127.0.0.1 signed by ca, and ca.crt.
func (ca testCA) writeServing(dir string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "parley-session-api"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	// The kubelet swaps a mounted Secret's files at once; write the pair as one step too.
	tmp := GinkgoT().TempDir()
	files := map[string][]byte{
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"ca.crt":  ca.certPEM,
	}
	for name, data := range files {
		Expect(os.WriteFile(filepath.Join(tmp, name), data, 0o600)).To(Succeed())
	}
	for _, name := range []string{"ca.crt", "tls.key", "tls.crt"} {
		Expect(os.Rename(filepath.Join(tmp, name), filepath.Join(dir, name))).To(Succeed())
	}
}

// serveTLS serves an empty answer over the TLS certs set up, on 127.0.0.1, until the spec ends.
func serveTLS(certs sessionapi.Certificates) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ReadHeaderTimeout: 5 * time.Second}
	Expect(certs.TLS()(ctx, srv)).To(Succeed())
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	DeferCleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// getOver makes a request on a new connection, trusting only caPEM.
func getOver(addr string, caPEM []byte) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	resp, err := c.Get("https://" + addr + "/")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// servedSerial is the serial of the certificate the server presents now.
func servedSerial(addr string) *big.Int {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the certificate only
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber
}
