// Package hostile_test runs the manager binary, as cmd/manager builds it, against envtest and a
// real S3 server, and plants hostile bytes in one conversation's history: the manager must stay
// alive with its peak memory well under its limit, fail that conversation alone, and keep
// serving the others. See docs/security.md.
package hostile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/historytest"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/cluster"
	"github.com/parley-dev/parley/test/support/managerproc"
)

const (
	namespace = "hostile"
	bucket    = "hostile"
	// memoryLimit is the manager's container limit as shipped (config/manager, the chart); the
	// process runs with GOMEMLIMIT at it, as there.
	memoryLimit = 768 << 20
	// peakBar: the manager's peak resident memory must stay under half its limit.
	peakBar = memoryLimit / 2
)

func TestDecompressionBombLeavesTheManagerAlive(t *testing.T) {
	if os.Getenv("PARLEY_HOSTILE") != "1" {
		t.Skip("runs only with PARLEY_HOSTILE=1 (make test-hostile): it builds the manager and runs it")
	}
	logf.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if keep := os.Getenv("PARLEY_HOSTILE_DIR"); keep != "" {
		dir = keep // keep the manager's log
	}
	cl := cluster.Start(ctx, t, dir, bucket)
	c, store, bin, kubeconfig := cl.Client, cl.Store, cl.Bin, cl.Kubeconfig
	token, err := cl.Tenant(ctx, namespace)
	if err != nil {
		t.Fatal(err)
	}
	port, err := managerproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "manager.log")
	proc, err := managerproc.Start(bin, []string{
		"--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0",
		fmt.Sprintf("--session-api-bind-address=127.0.0.1:%d", port), "--session-api-insecure",
	}, []string{"KUBECONFIG=" + kubeconfig, fmt.Sprintf("GOMEMLIMIT=%d", memoryLimit)}, logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Stop(5 * time.Second)
	api, err := parleyclient.New(parleyclient.Options{
		URL: fmt.Sprintf("http://127.0.0.1:%d", port), Token: token, Retries: -1, HTTPClient: &http.Client{Timeout: 30 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}

	a, b := objectStoreConversation("conv-a", store), objectStoreConversation("conv-b", store)
	for _, conv := range []*parleyv1alpha1.Conversation{a, b} {
		if err := c.Create(ctx, conv); err != nil {
			t.Fatal(err)
		}
		if err := cluster.WaitFor(ctx, c, conv, func(cv *parleyv1alpha1.Conversation) bool {
			return meta.IsStatusConditionTrue(cv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
		}); err != nil {
			t.Fatalf("%s: history not available: %v (log %s)", conv.Name, err, logPath)
		}
	}

	// A's history grows past a seal, then its segments are replaced by a 900 MiB bomb of about
	// 1 MB whose trailer hides its size.
	writer, err := s3.New(func() s3.Config { cfg := store; cfg.Prefix = a.Spec.History.ObjectStore.Prefix; return cfg }())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = writer.Close() }()
	key, err := historystore.Key(a)
	if err != nil {
		t.Fatal(err)
	}
	h, err := writer.Open(ctx, key, history.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 72 { // past twice the 32 pieces of an unsealed tail: sealed
		m := message(fmt.Sprintf("m-%d", i))
		rec, err := journal.MessageRecord(&m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Append(ctx, []history.Record{rec}); err != nil {
			t.Fatal(err)
		}
	}
	bomb := historytest.HideSize(historytest.GzipBomb(historytest.BombBytes))
	if n, err := historytest.ReplaceSealed(ctx, writer, key, bomb); err != nil || n == 0 {
		t.Fatalf("planted the bomb in %d segments: %v", n, err)
	}

	// The Session API reads it (A's agent appends), then the controller (A's spec changes).
	_, err = api.Append(ctx, namespace, a.Name, []conversation.Message{message("after-the-bomb")})
	var p *wire.Problem
	if !errors.As(err, &p) || p.Type != wire.ProblemHistoryCorrupt {
		t.Fatalf("append to the poisoned conversation: %v, want %s", err, wire.ProblemHistoryCorrupt)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
		t.Fatal(err)
	}
	a.Spec.Lifetime.TTL = &metav1.Duration{Duration: 48 * time.Hour}
	if err := c.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitFor(ctx, c, a, func(cv *parleyv1alpha1.Conversation) bool {
		cond := meta.FindStatusCondition(cv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == parleyv1alpha1.ReasonHistoryCorrupt
	}); err != nil {
		t.Fatalf("conv-a: no HistoryCorrupt condition: %v (log %s)", err, logPath)
	}

	// B keeps appending through the same manager.
	for i := range 10 {
		if _, err := api.Append(ctx, namespace, b.Name, []conversation.Message{message(fmt.Sprintf("b-%d", i))}); err != nil {
			t.Fatalf("append %d to conv-b: %v (log %s)", i, err, logPath)
		}
	}
	sum, err := api.Conversation(ctx, namespace, b.Name)
	if err != nil || sum.Messages != 10 {
		t.Fatalf("conv-b holds %d messages, want 10: %v", sum.Messages, err)
	}

	select {
	case <-proc.Exited():
		t.Fatalf("the manager exited: %v (log %s)", proc.Err(), logPath)
	default:
	}
	peak, err := proc.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("manager peak RSS %d MiB (bar %d MiB, limit %d MiB)", peak>>20, peakBar>>20, memoryLimit>>20)
	if peak > peakBar {
		t.Fatalf("the manager's peak RSS reached %d MiB, over %d MiB", peak>>20, peakBar>>20)
	}
}

func message(id string) conversation.Message {
	return conversation.Message{ID: id, Role: conversation.RoleUser, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: "hello"}}}
}

// objectStoreConversation is a Conversation whose history is on store under a prefix of its own.
func objectStoreConversation(name string, store s3.Config) *parleyv1alpha1.Conversation {
	return &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: parleyv1alpha1.ConversationSpec{
			History: parleyv1alpha1.HistorySpec{ObjectStore: &parleyv1alpha1.ObjectStoreHistory{
				Endpoint: store.Endpoint, Bucket: store.Bucket, Prefix: name, ForcePathStyle: true, Insecure: true,
				CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: "s3"},
			}},
			SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "You answer questions."},
		},
	}
}
