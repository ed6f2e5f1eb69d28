package sessionapi

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// CALifetime is how long a CA the manager makes is valid. Two years: a CA key copied out of a
// backup stops mattering within that, and rotations (each one an overlap that an agent pod
// running since before it misses, see caOverlap) stay rare.
const CALifetime = 2 * 365 * 24 * time.Hour

// backdate is how far NotBefore is set in the past, for clocks a little behind this one.
const backdate = time.Hour

// invalidDomain is the one DNS name a CA for IP addresses only permits: RFC 6761 reserves it,
// so no certificate with a DNS name is trusted through that CA.
const invalidDomain = "invalid"

// signer is a CA: its certificate and the key it signs with.
type signer struct {
	cert *x509.Certificate
	key  crypto.Signer
	// certPEM and keyPEM are the forms the CA Secret stores.
	certPEM, keyPEM []byte
}

// NewCA makes a CA valid CALifetime from now that may sign only for hosts (DNS names and IP
// addresses, as --session-api-hosts lists them): X.509 name constraints, so its key cannot
// mint a certificate any client of it accepts for another name.
func NewCA(now time.Time, hosts []string) (certPEM, keyPEM []byte, err error) {
	s, err := newSigner(now, hosts)
	if err != nil {
		return nil, nil, err
	}
	return s.certPEM, s.keyPEM, nil
}

func newSigner(now time.Time, hosts []string) (signer, error) {
	if len(hosts) == 0 {
		return signer{}, errors.New("a Session API CA needs at least one host name to permit")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return signer{}, err
	}
	serial, err := randomSerial()
	if err != nil {
		return signer{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "parley-session-api-ca"},
		NotBefore: now.Add(-backdate), NotAfter: now.Add(CALifetime),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign,
	}
	constrainNames(tmpl, hosts)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return signer{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return signer{}, err
	}
	return parseSigner(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

// constrainNames permits exactly hosts. RFC 5280 leaves a name type without constraints
// unconstrained, so a CA for DNS names only excludes every IP address, and one for IP
// addresses only permits no usable DNS name.
func constrainNames(tmpl *x509.Certificate, hosts []string) {
	tmpl.PermittedDNSDomainsCritical = true
	for _, h := range hosts {
		ip := net.ParseIP(h)
		switch {
		case ip == nil:
			tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, h)
		case ip.To4() != nil:
			tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, &net.IPNet{IP: ip.To4(), Mask: net.CIDRMask(32, 32)})
		default:
			tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, &net.IPNet{IP: ip, Mask: net.CIDRMask(128, 128)})
		}
	}
	if len(tmpl.PermittedIPRanges) == 0 {
		tmpl.ExcludedIPRanges = []*net.IPNet{
			{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
			{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)},
		}
	}
	if len(tmpl.PermittedDNSDomains) == 0 {
		tmpl.PermittedDNSDomains = []string{invalidDomain}
	}
}

// constrained reports whether ca carries name constraints (a CA made before they were added
// has none, and may sign for any name).
func constrained(ca *x509.Certificate) bool {
	return len(ca.PermittedDNSDomains) > 0 || len(ca.PermittedIPRanges) > 0
}

// permittedHosts lists the hosts ca permits, in the form NewCA takes them.
func permittedHosts(ca *x509.Certificate) []string {
	var hosts []string
	for _, d := range ca.PermittedDNSDomains {
		if d != invalidDomain {
			hosts = append(hosts, d)
		}
	}
	for _, r := range ca.PermittedIPRanges {
		hosts = append(hosts, r.IP.String())
	}
	return hosts
}

// permits reports whether ca may sign for every host: by name exactly as NewCA permits them,
// or any name when it carries no constraints.
func permits(ca *x509.Certificate, hosts []string) bool {
	if !constrained(ca) {
		return true
	}
	allowed := permittedHosts(ca)
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		if !slices.Contains(allowed, h) {
			return false
		}
	}
	return true
}

// parseSigner reads a CA from its PEM certificate and key, and checks that they pair.
func parseSigner(certPEM, keyPEM []byte) (signer, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return signer{}, fmt.Errorf("reading the Session API CA: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return signer{}, fmt.Errorf("reading the Session API CA: %w", err)
	}
	if !cert.IsCA {
		return signer{}, errors.New("reading the Session API CA: the certificate is not a CA")
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return signer{}, errors.New("reading the Session API CA: the key cannot sign")
	}
	return signer{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// parseCertificates reads every CERTIFICATE block of a PEM bundle.
func parseCertificates(bundle []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return certs, nil
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
}

func encodeCertificate(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func randomSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
}
