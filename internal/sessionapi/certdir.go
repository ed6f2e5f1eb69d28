package sessionapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// certDirPoll is how often ca.crt is read again. A mounted Secret changes by a swap of the
// whole folder, which the kubelet makes about a minute after the Secret changed.
const certDirPoll = 10 * time.Second

// certDir serves tls.crt and tls.key from a folder (a cert-manager Certificate's Secret mounted
// as a volume), reloaded when they change, and follows its ca.crt: what agents are given and
// what is published change when cert-manager renews the CA.
type certDir struct {
	dir       string
	watcher   *certwatcher.CertWatcher
	publisher *caPublisher // nil: nothing published
	clock     clock.Clock

	trust atomic.Pointer[[]byte]
	// published is the bundle last published (the loop's own).
	published []byte
}

func newCertDir(dir string, publisher *caPublisher, clk clock.Clock) (*certDir, error) {
	w, err := certwatcher.New(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("session API certificate in %s: %w", dir, err)
	}
	c := &certDir{dir: dir, watcher: w, publisher: publisher, clock: clk}
	if _, err := c.readCA(); err != nil {
		return nil, err
	}
	return c, nil
}

// NeedLeaderElection is false: every replica serves.
func (c *certDir) NeedLeaderElection() bool { return false }

// Start watches the folder until ctx ends.
func (c *certDir) Start(ctx context.Context) error {
	go func() { _ = c.watcher.Start(ctx) }()
	log := logf.FromContext(ctx).WithName("session-api-certificates")
	for {
		if err := c.follow(ctx); err != nil {
			log.Error(err, "following the Session API CA in "+c.dir)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(certDirPoll):
		}
	}
}

func (c *certDir) TLS() TLSSetup { return serveWith(c.watcher.GetCertificate) }

func (c *certDir) TrustedCA() []byte {
	if b := c.trust.Load(); b != nil {
		return *b
	}
	return nil
}

// follow reads ca.crt again and publishes it when it changed.
func (c *certDir) follow(ctx context.Context) error {
	ca, err := c.readCA()
	if err != nil || c.publisher == nil || len(ca) == 0 || bytes.Equal(ca, c.published) {
		return err
	}
	if err := c.publisher.publish(ctx, ca); err != nil {
		return err
	}
	c.published = ca
	return nil
}

// readCA reads ca.crt into trust. A folder without one is served by a CA clients already
// trust (a public one): agents are given none.
func (c *certDir) readCA() ([]byte, error) {
	ca, err := os.ReadFile(filepath.Join(c.dir, "ca.crt"))
	if errors.Is(err, fs.ErrNotExist) {
		ca, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the Session API CA: %w", err)
	}
	c.trust.Store(&ca)
	return ca, nil
}
