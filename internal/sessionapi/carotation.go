package sessionapi

import (
	"crypto/x509"
	"slices"
	"time"
)

// The replicas' shared CA is rotated with an overlap, so that a client holding the CAs
// published before a rotation keeps trusting the Session API across it:
//
//  1. At two thirds of the signing CA's life (or at once for a CA made before name constraints,
//     or one living longer than CALifetime) a next CA is made and published beside it. The
//     signing CA keeps signing.
//  2. caOverlap later the next CA signs: every serving certificate is renewed under it, and the
//     former CA stays published until it expires.
//
// A client that read the published CAs within caOverlap before step 2, or any time after it,
// trusts every replica. Only a CA that cannot sign for this replica's hosts is replaced at once
// (a renamed Service: certificates under the old CA would be refused anyway).

// caOverlap is how long a next CA is published before it signs: agent pods started in that
// time carry both CAs in their bundle.
const caOverlap = CALifetime / 6

// caSet is what the CA Secret holds: the CA that signs, the one that will, and earlier ones
// still trusted until they expire.
type caSet struct {
	current  signer
	next     *signer
	previous []*x509.Certificate
}

// caAction is what a replica does to the CA set.
type caAction int

const (
	// caKeep: nothing to change.
	caKeep caAction = iota
	// caStartRotation: make a next CA and publish it beside the signing one.
	caStartRotation
	// caPromote: the next CA signs; the former one stays published.
	caPromote
	// caReplace: a new CA signs at once (the signing one cannot serve these hosts, or ends
	// before a serving certificate would).
	caReplace
)

func (a caAction) String() string {
	return [...]string{"keep", "startRotation", "promote", "replace"}[a]
}

// decideCA is what to do to s at now for a replica serving hosts.
func decideCA(now time.Time, s caSet, hosts []string) caAction {
	cur := s.current.cert
	ending := !now.Before(cur.NotAfter.Add(-ServingLifetime))
	if !permits(cur, hosts) {
		return caReplace
	}
	if s.next != nil {
		switch {
		case ending || !now.Before(promoteAt(s.next.cert)):
			return caPromote
		case !permits(s.next.cert, hosts):
			return caStartRotation
		}
		return caKeep
	}
	switch {
	case ending:
		return caReplace
	case !now.Before(rotateAt(cur)) || !constrained(cur) || cur.NotAfter.Sub(cur.NotBefore) > CALifetime+backdate:
		return caStartRotation
	}
	return caKeep
}

// rotateAt is when a next CA is made: at two thirds of the signing CA's life.
func rotateAt(ca *x509.Certificate) time.Time {
	return ca.NotBefore.Add(ca.NotAfter.Sub(ca.NotBefore) * 2 / 3)
}

// promoteAt is when a next CA starts signing.
func promoteAt(next *x509.Certificate) time.Time {
	return next.NotBefore.Add(backdate + caOverlap)
}

// applyCA does action to s, making a CA for hosts when it needs one.
func applyCA(now time.Time, s caSet, action caAction, hosts []string) (caSet, error) {
	switch action {
	case caStartRotation:
		next, err := newSigner(now, hosts)
		if err != nil {
			return s, err
		}
		s.next = &next
	case caPromote:
		s.previous = append(slices.Clone(s.previous), s.current.cert)
		s.current, s.next = *s.next, nil
	case caReplace:
		// The new CA also permits what the replaced one did: during a rolling update that
		// renames the Service, replicas with the old names sign under it too, instead of
		// replacing it back.
		names := hosts
		if constrained(s.current.cert) {
			names = union(hosts, permittedHosts(s.current.cert))
		}
		fresh, err := newSigner(now, names)
		if err != nil {
			return s, err
		}
		s.previous = append(slices.Clone(s.previous), s.current.cert)
		s.current, s.next = fresh, nil
	}
	return s, nil
}

// pruneCA drops the earlier CAs that have expired, and reports whether it dropped any.
func pruneCA(now time.Time, s caSet) (caSet, bool) {
	kept := slices.DeleteFunc(slices.Clone(s.previous), func(c *x509.Certificate) bool { return !now.Before(c.NotAfter) })
	pruned := len(kept) != len(s.previous)
	s.previous = kept
	return s, pruned
}

// trustBundle is what clients are told to trust: every CA of s valid at now, PEM.
func trustBundle(now time.Time, s caSet) []byte {
	var out []byte
	certs := append(slices.Clone(s.previous), s.current.cert)
	if s.next != nil {
		certs = append(certs, s.next.cert)
	}
	for _, c := range certs {
		if now.Before(c.NotAfter) {
			out = append(out, encodeCertificate(c)...)
		}
	}
	return out
}

// nextCAChange is the earliest time decideCA or pruneCA may change s.
func nextCAChange(s caSet) time.Time {
	cur := s.current.cert
	at := cur.NotAfter.Add(-ServingLifetime)
	if s.next != nil {
		at = earliest(at, promoteAt(s.next.cert))
	} else {
		at = earliest(at, rotateAt(cur))
	}
	for _, p := range s.previous {
		at = earliest(at, p.NotAfter)
	}
	return at
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
