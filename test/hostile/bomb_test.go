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
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/managerproc"
	"github.com/parley-dev/parley/test/support/repopath"
	"github.com/parley-dev/parley/test/support/s3server"
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
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if keep := os.Getenv("PARLEY_HOSTILE_DIR"); keep != "" {
		dir = keep // keep the manager's log
	}
	bin, err := managerproc.Build(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, stopEnv, err := kubeenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer stopEnv()
	if err := kubeenv.InstallCRDs(cfg, root); err != nil {
		t.Fatal(err)
	}
	c, _, err := kubeenv.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := s3server.Start(s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	store := s3.Config{
		Endpoint: "http://" + srv.Endpoint, Bucket: bucket, Addressing: s3.AddressingPath,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey,
	}
	if err := s3.EnsureBucket(ctx, store); err != nil {
		t.Fatal(err)
	}
	token := setupNamespace(ctx, t, c, srv)

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := kubeenv.WriteKubeconfig(kubeconfig, cfg, ""); err != nil {
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
		if err := waitFor(ctx, c, conv, func(cv *parleyv1alpha1.Conversation) bool {
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
	if err := waitFor(ctx, c, a, func(cv *parleyv1alpha1.Conversation) bool {
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

// setupNamespace creates the namespace, the S3 credentials and an agent ServiceAccount that may
// read and append to every conversation of it, and returns a token of that ServiceAccount.
func setupNamespace(ctx context.Context, t *testing.T, c client.Client, srv *s3server.Server) string {
	t.Helper()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{"parley.dev"}, Resources: []string{"conversations/history"}, Verbs: []string{"get", "create"},
			}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "agent"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: namespace, Name: "agent"}},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "s3"},
			Data:       map[string][]byte{s3.SecretAccessKeyID: []byte(srv.AccessKey), s3.SecretSecretAccessKey: []byte(srv.SecretKey)},
		},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{wire.Audience}}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// waitFor polls conv until ok says yes, for up to a minute.
func waitFor(ctx context.Context, c client.Client, conv *parleyv1alpha1.Conversation, ok func(*parleyv1alpha1.Conversation) bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(conv), conv); err == nil && ok(conv) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("timed out after a minute")
		case <-time.After(200 * time.Millisecond):
		}
	}
}
