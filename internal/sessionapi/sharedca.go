package sessionapi

import (
	"context"
	"crypto/tls"
	"errors"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

const (
	// caResync bounds how long a replica goes without reading the CA set, so that a change
	// another replica made (one with other hosts, during a rolling update) reaches it.
	caResync = time.Hour
	// caRetry is the wait after a failed refresh (the API server unreachable).
	caRetry = time.Minute
	// caAttempts bounds the refreshes of one round lost to other replicas' writes.
	caAttempts = 3
)

// sharedCA serves a certificate this replica signs for itself with the CA the replicas share,
// renews it at two thirds of its life (or at once when another CA signs), rotates the CA as
// carotation.go describes and publishes the CAs clients trust.
type sharedCA struct {
	store     caStore
	publisher *caPublisher // nil: nothing published
	hosts     []string
	clock     clock.Clock

	// signing, wake: the refresh loop's own (the first refresh runs before the loop starts).
	signing signer
	wake    time.Time

	serving atomic.Pointer[servingCert]
	trust   atomic.Pointer[[]byte]
}

func newSharedCA(ctx context.Context, store caStore, publisher *caPublisher, hosts []string, clk clock.Clock) (*sharedCA, error) {
	c := &sharedCA{store: store, publisher: publisher, hosts: hosts, clock: clk}
	wake, err := c.refresh(ctx)
	if err != nil {
		return nil, err
	}
	c.wake = wake
	return c, nil
}

// NeedLeaderElection is false: every replica serves its own certificate.
func (c *sharedCA) NeedLeaderElection() bool { return false }

// Start refreshes the certificates whenever one is due, until ctx ends.
func (c *sharedCA) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("session-api-certificates")
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-waitUntil(c.clock, c.wake):
		}
		wake, err := c.refresh(ctx)
		if err != nil {
			log.Error(err, "refreshing the Session API certificates; the current ones stay in use")
		}
		c.wake = wake
	}
}

func (c *sharedCA) TLS() TLSSetup { return serveWith(c.getCertificate) }

func (c *sharedCA) TrustedCA() []byte {
	if b := c.trust.Load(); b != nil {
		return *b
	}
	return nil
}

func (c *sharedCA) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.serving.Load().tls, nil
}

// refresh brings the CA set, what is published and the serving certificate up to date, and
// returns when to look again. When the CA set cannot be read, the serving certificate is still
// renewed with the CA known, so it does not lapse while the API server is away.
func (c *sharedCA) refresh(ctx context.Context) (time.Time, error) {
	now := c.clock.Now()
	set, err := c.syncCA(ctx, now)
	wake := now.Add(caResync)
	if err == nil {
		c.signing = set.current
		bundle := trustBundle(now, set)
		c.trust.Store(&bundle)
		if c.publisher != nil {
			err = c.publisher.publish(ctx, bundle)
		}
		wake = earliest(wake, nextCAChange(set))
	}
	if err != nil {
		wake = now.Add(caRetry)
	}
	if c.signing.cert == nil {
		return wake, err
	}
	if servingDue(now, c.serving.Load(), c.signing) {
		sc, issueErr := issueServing(now, c.signing, c.hosts)
		if issueErr != nil {
			return now.Add(caRetry), errors.Join(err, issueErr)
		}
		c.serving.Store(sc)
	}
	return earliest(wake, c.serving.Load().renewAt), err
}

// syncCA reads the shared CA set and stores what decideCA and pruneCA make of it, creating the
// first CA when there is none. Replicas racing on a write re-read and decide again: the loser
// finds the winner's set.
func (c *sharedCA) syncCA(ctx context.Context, now time.Time) (caSet, error) {
	log := logf.FromContext(ctx).WithName("session-api-certificates")
	for attempt := 1; ; attempt++ {
		set, found, err := c.store.load(ctx)
		if err != nil {
			return caSet{}, err
		}
		if !found {
			first, err := newSigner(now, c.hosts)
			if err != nil {
				return caSet{}, err
			}
			set = caSet{current: first}
			err = c.store.create(ctx, set)
			if err == nil {
				log.Info("created the Session API CA", "notAfter", first.cert.NotAfter)
				return set, nil
			}
			if !apierrors.IsAlreadyExists(err) || attempt == caAttempts {
				return caSet{}, err
			}
			continue
		}
		action := decideCA(now, set, c.hosts)
		if set, err = applyCA(now, set, action, c.hosts); err != nil {
			return caSet{}, err
		}
		set, pruned := pruneCA(now, set)
		if action == caKeep && !pruned {
			return set, nil
		}
		err = c.store.update(ctx, set)
		if err == nil {
			log.Info("changed the Session API CAs", "action", action.String(), "signingNotAfter", set.current.cert.NotAfter)
			return set, nil
		}
		if !apierrors.IsConflict(err) || attempt == caAttempts {
			return caSet{}, err
		}
	}
}
