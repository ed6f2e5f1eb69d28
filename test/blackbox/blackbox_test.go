// Package blackbox_test attacks Parley as a reviewer would who is given only the install: the
// manager binary runs as its ServiceAccount (a token of it in a kubeconfig) on a real API server
// (envtest's kube-apiserver, RBAC authorization) holding everything dist/install.yaml ships (the
// CRDs, the roles and bindings, the admission policy), with a real S3 server beside it. The
// attacks go through HTTP (the Session API on 127.0.0.1, trusted through the CA the manager
// publishes) and through the Kubernetes API as people and agents holding only Parley's roles.
// Each subtest is one case of docs/security.md; `make test-blackbox` runs them.
package blackbox_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestBlackBox(t *testing.T) {
	if os.Getenv("PARLEY_BLACKBOX") != "1" {
		t.Skip("runs only with PARLEY_BLACKBOX=1 (make test-blackbox): it builds the manager and runs it as its ServiceAccount")
	}
	logf.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if keep := os.Getenv("PARLEY_BLACKBOX_DIR"); keep != "" {
		dir = keep // keep the manager's log
	}
	e := start(ctx, t, dir)

	// The Kubernetes API: what the install grants and what admission refuses.
	e.run(t, "the manager's ClusterRole has no serviceaccounts/token", func(t *testing.T) { managerMintsNoTokens(ctx, t, e) })
	e.run(t, "the CA key is unreadable to user roles while the certificate is published", func(t *testing.T) { caKeyIsPrivate(ctx, t, e) })
	e.run(t, "an agent whose author may not create pods is refused", func(t *testing.T) { agentNeedsPodCreate(ctx, t, e) })
	e.run(t, "a summarizer endpoint never receives a key its author may not read", func(t *testing.T) { summarizerKeyNeedsSecretGet(ctx, t, e) })
	e.run(t, "a fork of a conversation the author may not read is refused", func(t *testing.T) { forkNeedsHistoryGet(ctx, t, e) })
	e.run(t, "a summarizer endpoint's redirect takes the key nowhere", func(t *testing.T) { summarizerRedirectTakesTheKeyNowhere(ctx, t, e) })

	// The Session API.
	e.run(t, "429 past the limits", func(t *testing.T) { appendsPastTheLimit(ctx, t, e) })
	e.run(t, "follow streams are capped", func(t *testing.T) { followsCapped(ctx, t, e) })
	e.run(t, "a junk-token flood costs fewer than 500 TokenReviews", func(t *testing.T) { junkFloodReviews(ctx, t, e) })
	e.run(t, "a token naming conversations it may not read costs few access reviews", func(t *testing.T) { namesFloodReviews(ctx, t, e) })
	e.run(t, "an id the store cannot keep is 422", func(t *testing.T) { unstorableIDsAreRefused(ctx, t, e) })
	e.run(t, "an adapter state status cannot hold leaves status writable", func(t *testing.T) { adapterStateLeavesStatusWritable(ctx, t, e) })
	// The bomb's memory bar needs a baseline: it runs before the stalled reader, whose
	// answers leave the manager's memory high for the rest of the run.
	e.run(t, "a decompression bomb leaves the manager alive and others appending", func(t *testing.T) { bombLeavesOthersAppending(ctx, t, e) })
	e.run(t, "several decompression bombs at once leave the manager alive", func(t *testing.T) { bombsAtOnce(ctx, t, e) })
	e.run(t, "a squatted agent pod name gets no binding", func(t *testing.T) { squattedPodGetsNoBinding(ctx, t, e) })
	e.run(t, "a squatted final Checkpoint name leaves the history in place", func(t *testing.T) { squattedArchiveKeepsTheHistory(ctx, t, e) })
	e.run(t, "a reader that never reads does not delay appends", func(t *testing.T) { stalledReaderDelaysNothing(ctx, t, e) })
	e.run(t, "answers nobody reads are held within a budget", func(t *testing.T) { answersHeldAreBounded(ctx, t, e) })
	e.run(t, "a loop of whole-history reads leaves the manager's CPU to others", func(t *testing.T) { wholeHistoryReadsAreBounded(ctx, t, e) })
	e.run(t, "forced compactions keep a minimum interval", func(t *testing.T) { forcedCompactionInterval(ctx, t, e) })

	e.mustBeAlive(t)
}
