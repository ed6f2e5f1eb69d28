package blackbox_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/historytest"
	"github.com/parley-dev/parley/pkg/history/s3"
)

// bombLeavesOthersAppending: whoever can write a conversation's bucket replaces its sealed
// segments by a decompression bomb (about 1 MB inflating to 900 MiB, its size hidden); the
// manager, at its shipped memory limit, stays up and the other conversations keep appending.
func bombLeavesOthersAppending(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "bombs")
	a, b := inBucket(ns, "poisoned", e.store), inBucket(ns, "bystander", e.store)
	e.conversation(ctx, t, a)
	e.conversation(ctx, t, b)
	agent := e.agentToken(ctx, t, ns)
	bomb := historytest.HideSize(historytest.GzipBomb(historytest.BombBytes))
	e.plantBomb(ctx, t, a, bomb)

	// The Session API reads it, then the controller (a spec change).
	res, body, err := e.do(ctx, http.MethodPost, convPath(ns, a.Name)+"/messages", agent, appendBody("after", 1, "hello"))
	if err != nil {
		t.Fatalf("append to the poisoned conversation: %v (manager log %s)", err, e.logPath)
	}
	t.Logf("append to the poisoned conversation: %d %.200s", res.StatusCode, body)
	if res.StatusCode < 500 || !strings.Contains(string(body), "history-corrupt") {
		t.Errorf("append to the poisoned conversation: %d %s, want 500 history-corrupt", res.StatusCode, body)
	}
	a.Spec.Lifetime.TTL = &metav1.Duration{Duration: 48 * time.Hour}
	if err := e.admin.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the controller opens it

	for i := range 10 {
		if res, body, err := e.do(ctx, http.MethodPost, convPath(ns, b.Name)+"/messages", agent, appendBody(fmt.Sprintf("b%d", i), 1, "hello")); err != nil || res.StatusCode >= 300 {
			t.Fatalf("append %d to the bystander: %v %v %s (manager log %s)", i, err, res, body, e.logPath)
		}
	}
	e.mustBeAlive(t)
	peak, err := e.proc.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("manager peak RSS %d MiB (limit %d MiB)", peak>>20, managerLimitMi)
	if peak > managerLimitMi<<20/2 {
		t.Errorf("the manager's peak RSS reached %d MiB, over half its %d MiB limit", peak>>20, managerLimitMi)
	}
}

// plantBomb does what whoever writes conv's bucket can (not the manager, whose view of the
// history would stay current): it grows the history past a seal, then replaces its sealed
// segments by bomb.
func (e *env) plantBomb(ctx context.Context, t *testing.T, conv *parleyv1alpha1.Conversation, bomb []byte) {
	t.Helper()
	if err := e.admin.Get(ctx, client.ObjectKeyFromObject(conv), conv); err != nil {
		t.Fatal(err)
	}
	cfg := e.store
	cfg.Prefix = conv.Spec.History.ObjectStore.Prefix
	bucket, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bucket.Close() }()
	key, err := historystore.Key(conv)
	if err != nil {
		t.Fatal(err)
	}
	h, err := bucket.Open(ctx, key, history.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 72 { // past twice the pieces of an unsealed tail: sealed segments
		m := conversation.Message{ID: fmt.Sprintf("p%d", i), Role: conversation.RoleUser, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: "hello"}}}
		rec, err := journal.MessageRecord(&m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Append(ctx, []history.Record{rec}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := historytest.ReplaceSealed(ctx, bucket, key, bomb); err != nil || n == 0 {
		t.Fatalf("planted the bomb in %d segments of %s: %v", n, conv.Name, err)
	}
}

// bombsAtOnce: the bound on one hostile read is per read; several poisoned conversations read
// at once must still leave the manager alive, under its limit, and the others appending. Each
// bomb declares the largest object an S3 history holds (64 MiB, docs/storage.md), so each read
// inflates that much before it is found out.
func bombsAtOnce(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "bombs-at-once")
	const poisoned = 16 // together, far past the manager's limit were they decoded at once
	bystander := inBucket(ns, "bystander", e.store)
	e.conversation(ctx, t, bystander)
	agent := e.agentToken(ctx, t, ns)
	bomb := historytest.DeclareSize(historytest.GzipBomb(historytest.BombBytes), s3ObjectLimit)
	names := make([]string, 0, poisoned)
	for i := range poisoned {
		c := inBucket(ns, fmt.Sprintf("poisoned-%d", i), e.store)
		e.conversation(ctx, t, c)
		e.plantBomb(ctx, t, c, bomb)
		names = append(names, c.Name)
	}
	var wg sync.WaitGroup
	codes := make([]int, poisoned)
	for i, name := range names {
		wg.Go(func() {
			res, _, err := e.do(ctx, http.MethodPost, convPath(ns, name)+"/messages", agent, appendBody("after", 1, "hello"))
			if err == nil {
				codes[i] = res.StatusCode
			}
		})
	}
	wg.Wait()
	t.Logf("%d appends to poisoned conversations at once: %v", poisoned, codes)
	e.mustBeAlive(t)
	for i := range 10 {
		if res, body, err := e.do(ctx, http.MethodPost, convPath(ns, bystander.Name)+"/messages", agent, appendBody(fmt.Sprintf("b%d", i), 1, "hello")); err != nil || res.StatusCode >= 300 {
			t.Fatalf("append %d to the bystander: %v %v %s (manager log %s)", i, err, res, body, e.logPath)
		}
	}
	peak, err := e.proc.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("manager peak RSS %d MiB (limit %d MiB)", peak>>20, managerLimitMi)
	if peak > managerLimitMi<<20*9/10 {
		t.Errorf("%d bombs read at once took the manager's peak RSS to %d MiB, within a tenth of its %d MiB container limit (past it, a node OOM-kills the replica)",
			poisoned, peak>>20, managerLimitMi)
	}
}
