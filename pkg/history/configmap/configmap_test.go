package configmap_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/configmap"
	"github.com/parley-dev/parley/pkg/history/historytest"
	"github.com/parley-dev/parley/test/support/kubeenv"
)

var restConfig *rest.Config

func TestMain(m *testing.M) {
	historytest.RunChildIfRequested(func() (history.Store, error) {
		cfg, err := kubeenv.FromEnv()
		if err != nil {
			return nil, err
		}
		return newStore(cfg, 0)
	})
	ctrllog.SetLogger(logr.Discard())
	cfg, stop, err := kubeenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	restConfig = cfg
	code := m.Run()
	stop()
	os.Exit(code)
}

func newStore(cfg *rest.Config, maxBytes int64) (history.Store, error) {
	return newStoreCompressed(cfg, maxBytes, false)
}

func newStoreCompressed(cfg *rest.Config, maxBytes int64, compressed bool) (history.Store, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	return configmap.New(configmap.Config{Client: c, Namespace: "default", MaxBytes: maxBytes, CompressSegments: compressed})
}

func mustStore(t *testing.T, maxBytes int64) history.Store {
	t.Helper()
	return mustStoreCompressed(t, maxBytes, false)
}

func mustStoreCompressed(t *testing.T, maxBytes int64, compressed bool) history.Store {
	t.Helper()
	s, err := newStoreCompressed(restConfig, maxBytes, compressed)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	t.Run("plain", func(t *testing.T) { conformance(t, false) })
	t.Run("compressed", func(t *testing.T) { conformance(t, true) })
}

func conformance(t *testing.T, compressed bool) {
	historytest.Run(t, historytest.Harness{
		New: func(t *testing.T) history.Store { return mustStoreCompressed(t, 64<<20, compressed) },
		NewWithLimit: func(t *testing.T, maxBytes int64) history.Store {
			return mustStoreCompressed(t, maxBytes, compressed)
		},
		ChildEnv:     kubeenv.Env(restConfig),
		LargeRecords: false,
		TooLargeHint: "objectStore",
	})
}

// TestLabelsAndOwner checks what garbage collection and kubectl rely on:
// every ConfigMap of a history carries the labels and the owner reference,
// and only the index is mutable.
func TestLabelsAndOwner(t *testing.T) {
	ctx := context.Background()
	s := mustStore(t, 0)
	defer func() { _ = s.Close() }()
	owner := metav1.OwnerReference{APIVersion: "parley.dev/v1alpha1", Kind: "Conversation", Name: "owned", UID: "5b8c6a0e-0000-4000-8000-000000000001"}
	h, err := s.Open(ctx, "owned", history.OpenOptions{Create: true, Owner: &owner})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 72 { // past a seal (twice 32 entries in the index)
		if _, err := h.Append(ctx, []history.Record{{ID: fmt.Sprint(i), Data: []byte(`{"n":1}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	// Too big for the index: written as a tail object.
	big := []history.Record{{ID: "big", Data: []byte(`"` + strings.Repeat("x", configmap.DefaultMaxOpenBytes) + `"`)}}
	if _, err := h.Append(ctx, big); err != nil {
		t.Fatal(err)
	}
	if _, err := h.PutCheckpoint(ctx, []byte{0xff, 0x00}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restConfig, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace("default"), client.MatchingLabels{configmap.LabelConversation: "owned"}); err != nil {
		t.Fatal(err)
	}
	parts := map[string]int{}
	for _, cm := range list.Items {
		parts[cm.Labels[configmap.LabelPart]]++
		if cm.Labels[configmap.LabelManagedBy] != "parley" {
			t.Errorf("%s: managed-by label %q", cm.Name, cm.Labels[configmap.LabelManagedBy])
		}
		if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != owner.UID {
			t.Errorf("%s: owner references %v", cm.Name, cm.OwnerReferences)
		}
		immutable := cm.Immutable != nil && *cm.Immutable
		if isIndex := cm.Labels[configmap.LabelPart] == "index"; immutable == isIndex {
			t.Errorf("%s: immutable=%v", cm.Name, immutable)
		}
	}
	if parts["index"] != 1 || parts["segment"] == 0 || parts["tail"] == 0 || parts["checkpoint"] != 1 {
		t.Fatalf("ConfigMaps by part: %v", parts)
	}
}

// TestClusterWideStore: with no fixed namespace, names carry it.
func TestClusterWideStore(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(restConfig, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Tolerate a namespace left by an earlier run in this process (go test -count N).
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agents"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s, err := configmap.New(configmap.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if _, err := s.Open(ctx, "no-namespace", history.OpenOptions{Create: true}); err == nil {
		t.Fatal("a name without a namespace was accepted by a cluster-wide store")
	}
	h, err := s.Open(ctx, "agents/chat", history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Append(ctx, []history.Record{{ID: "1", Data: []byte("{}")}}); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "agents", Name: "chat-history"}, &cm); err != nil {
		t.Fatalf("index ConfigMap in namespace agents: %v", err)
	}
}

// TestOwnerGivenOnLaterOpen: handles are shared per store, so a process
// that first opened a history without an owner (to read it) and then opens
// it with the owner (to append) must still put the owner reference on what
// it writes from then on, or garbage collection would never remove it.
func TestOwnerGivenOnLaterOpen(t *testing.T) {
	ctx := context.Background()
	owner := metav1.OwnerReference{APIVersion: "parley.dev/v1alpha1", Kind: "Conversation", Name: "late-owner", UID: "5b8c6a0e-0000-4000-8000-000000000002"}
	creator := mustStore(t, 0)
	defer func() { _ = creator.Close() }()
	if _, err := creator.Open(ctx, "late-owner", history.OpenOptions{Create: true, Owner: &owner}); err != nil {
		t.Fatal(err)
	}
	s := mustStore(t, 0)
	defer func() { _ = s.Close() }()
	if _, err := s.Open(ctx, "late-owner", history.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	h, err := s.Open(ctx, "late-owner", history.OpenOptions{Owner: &owner})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, err := h.Append(ctx, []history.Record{{ID: fmt.Sprint(i), Data: []byte(`{"n":1}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.PutCheckpoint(ctx, []byte("state")); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restConfig, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace("default"), client.MatchingLabels{configmap.LabelConversation: "late-owner"}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) < 3 {
		t.Fatalf("%d ConfigMaps", len(list.Items))
	}
	for _, cm := range list.Items {
		if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != owner.UID {
			t.Errorf("%s: owner references %v", cm.Name, cm.OwnerReferences)
		}
	}
}

// TestLargestObjectsFit: the largest record the store accepts, in its worst
// encoding (binary data as base64, an id that JSON escapes six-fold), and the
// largest checkpoint fit a ConfigMap on a real API server, as a tail object
// and once sealed.
func TestLargestObjectsFit(t *testing.T) {
	ctx := context.Background()
	s := mustStore(t, 16<<20)
	defer func() { _ = s.Close() }()
	h, err := s.Open(ctx, "largest", history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	// 900 KiB objects, less the footer and id allowance, as base64.
	const largest = (900<<10-96-512)*3/4 - 4
	data := make([]byte, largest)
	_, _ = rand.Read(data)
	id := strings.Repeat("\x01", 512)
	if _, err := h.Append(ctx, []history.Record{{ID: id, Data: data}}); err != nil {
		t.Fatalf("largest record: %v", err)
	}
	if _, err := h.Append(ctx, []history.Record{{ID: "too-big", Data: make([]byte, largest+1)}}); !errors.Is(err, history.ErrTooLarge) {
		t.Fatalf("one byte more: %v, want ErrTooLarge", err)
	}
	if _, err := h.Append(ctx, []history.Record{{ID: "small", Data: []byte(`{}`)}}); err != nil { // seals the big tail
		t.Fatal(err)
	}
	fresh := mustStore(t, 16<<20)
	defer func() { _ = fresh.Close() }()
	h2, err := fresh.Open(ctx, "largest", history.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	page, err := h2.Read(ctx, history.ReadOptions{})
	if err != nil || len(page.Entries) != 2 || page.Entries[0].ID != id || !bytes.Equal(page.Entries[0].Data, data) {
		t.Fatalf("read back: %d entries, %v", len(page.Entries), err)
	}
	snapshot := make([]byte, 900<<10)
	_, _ = rand.Read(snapshot)
	d, err := h.PutCheckpoint(ctx, snapshot)
	if err != nil {
		t.Fatalf("largest checkpoint: %v", err)
	}
	if got, err := h2.GetCheckpoint(ctx, d); err != nil || !bytes.Equal(got, snapshot) {
		t.Fatalf("largest checkpoint read back: %v", err)
	}
	if _, err := h.PutCheckpoint(ctx, append(snapshot, 0)); !errors.Is(err, history.ErrTooLarge) {
		t.Fatalf("checkpoint one byte larger: %v, want ErrTooLarge", err)
	}
}

// Whoever may edit ConfigMaps in the namespace chooses a history's bytes: an index longer than
// any object this backend writes (but under what the API server accepts) is ErrCorrupt, even
// when it is well formed (here: padded with spaces, its checksum recomputed).
func TestOversizeObjectIsCorrupt(t *testing.T) {
	ctx := context.Background()
	s := mustStore(t, 0)
	defer func() { _ = s.Close() }()
	if _, err := s.Open(ctx, "oversize", history.OpenOptions{Create: true}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restConfig, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "oversize-history"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"data": padIndex(t, cm.Data["data"], 1000<<10)}
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	again := mustStore(t, 0)
	defer func() { _ = again.Close() }()
	_, err = again.Open(ctx, "oversize", history.OpenOptions{})
	if !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("open of a well-formed index of 1000 KiB: %v, want ErrCorrupt", err)
	}
}

// padIndex puts n spaces inside the index's first JSON object and recomputes the footer's
// checksum, so the index stays well formed.
func padIndex(t *testing.T, index string, n int) string {
	t.Helper()
	body := strings.TrimSuffix(index, "\n")
	cut := strings.LastIndex(body, "\n") + 1
	lines, footer := index[:cut], body[cut:]
	if !strings.HasPrefix(lines, "{") || !strings.Contains(footer, footerSum(lines)) {
		t.Fatalf("the index is not lines and a footer: %q", index)
	}
	padded := "{" + strings.Repeat(" ", n) + lines[1:]
	return padded + strings.Replace(footer, footerSum(lines), footerSum(padded), 1) + "\n"
}

func footerSum(lines string) string {
	sum := sha256.Sum256([]byte(lines))
	return hex.EncodeToString(sum[:])
}
