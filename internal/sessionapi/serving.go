package sessionapi

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"time"
)

// ServingLifetime is how long a replica's serving certificate is valid. Its key lives only in
// the replica's memory, and a short life bounds what a copy of it is worth; 30 days keeps the
// ten days between renewal (at two thirds) and expiry for a replica that cannot renew to be
// noticed and fixed.
const ServingLifetime = 30 * 24 * time.Hour

// servingCert is a replica's serving certificate, with what renewal needs to know of it.
type servingCert struct {
	tls     *tls.Certificate
	leaf    *x509.Certificate
	renewAt time.Time
	// issuer is the DER of the CA that signed it.
	issuer []byte
}

// issueServing makes a serving certificate for hosts signed by ca, valid ServingLifetime (never
// past the CA's own end), renewed at two thirds of its life.
func issueServing(now time.Time, ca signer, hosts []string) (*servingCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "parley-session-api"},
		NotBefore: now.Add(-backdate), NotAfter: earliest(now.Add(ServingLifetime), ca.cert.NotAfter),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &servingCert{
		tls:     &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key, Leaf: leaf},
		leaf:    leaf,
		renewAt: now.Add(leaf.NotAfter.Sub(now) * 2 / 3),
		issuer:  ca.cert.Raw,
	}, nil
}

// servingDue reports whether c must be replaced at now: none yet, past its renewal time, or
// signed by another CA than the one that signs now.
func servingDue(now time.Time, c *servingCert, ca signer) bool {
	return c == nil || !now.Before(c.renewAt) || !bytes.Equal(c.issuer, ca.cert.Raw)
}
