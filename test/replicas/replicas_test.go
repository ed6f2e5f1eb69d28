// Package replicas_test runs two manager replicas, the real binary, against envtest and
// SIGKILLs them in turn while writers append to one conversation per history backend through
// both: no acknowledged append may be lost or stored twice (issue 11's bar). See
// docs/development.md ("The replica-kill test").
package replicas_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/cluster"
	"github.com/parley-dev/parley/test/support/managerproc"
)

const (
	namespace      = "replicas"
	leaseNamespace = "parley-system"
	bucket         = "replicas"
	// minAppends is the bar: acknowledged appends per conversation.
	minAppends = 1000
	// writers per conversation, each appending its own batches in order.
	writers = 4
	// afterRestart is how many appends each conversation takes after a restart before the
	// next kill, so the restarted replica serves again before its peer goes.
	afterRestart = 100
)

// victims are the replicas SIGKILLed, in order: each is killed mid-append and restarted.
var victims = []int{0, 1, 0, 1}

// replica is one manager process serving the Session API on a fixed loopback port.
type replica struct {
	i         int
	bin, kube string
	port      int
	log       string
	proc      *managerproc.Process
}

func (r *replica) url() string { return fmt.Sprintf("http://127.0.0.1:%d", r.port) }

func (r *replica) start(t *testing.T) {
	t.Helper()
	p, err := managerproc.Start(r.bin, []string{
		"--leader-elect", "--leader-election-namespace=" + leaseNamespace,
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		fmt.Sprintf("--session-api-bind-address=127.0.0.1:%d", r.port), "--session-api-insecure",
	}, []string{"KUBECONFIG=" + r.kube}, r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.proc = p
}

// waitServing waits until the Session API answers (401 without a token).
func (r *replica) waitServing(ctx context.Context) error {
	hc := &http.Client{Timeout: time.Second}
	for ctx.Err() == nil {
		select {
		case <-r.proc.Exited():
			return fmt.Errorf("replica %d exited: %w; the end of its log:\n%s", r.i, r.proc.Err(), logTail(r.log, 20))
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url()+wire.ConversationPath(namespace, "probe"), nil)
		if resp, err := hc.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("replica %d did not serve the Session API in time (log %s)", r.i, r.log)
}

func TestReplicaKillLosesAndDuplicatesNothing(t *testing.T) {
	if os.Getenv("PARLEY_REPLICAS") != "1" {
		t.Skip("runs only with PARLEY_REPLICAS=1 (make test-replicas): it builds the manager and runs two for a minute or two")
	}
	logf.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if keep := os.Getenv("PARLEY_REPLICAS_DIR"); keep != "" {
		dir = keep // keep the replicas' logs
	}
	began := time.Now()
	cl := cluster.Start(ctx, t, dir, bucket)
	t.Logf("manager built and servers started in %s", time.Since(began).Round(time.Millisecond))
	c, s3srv, bin, kubeconfig := cl.Client, cl.S3, cl.Bin, cl.Kubeconfig
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}); err != nil {
		t.Fatal(err)
	}
	token, err := cl.Tenant(ctx, namespace)
	if err != nil {
		t.Fatal(err)
	}

	var reps [2]*replica
	taken := map[int]bool{}
	for i := range reps {
		// A port is free when asked for, not reserved: two asks may get the same one.
		port, err := managerproc.FreePort()
		for err == nil && taken[port] {
			port, err = managerproc.FreePort()
		}
		if err != nil {
			t.Fatal(err)
		}
		taken[port] = true
		reps[i] = &replica{i: i, bin: bin, kube: kubeconfig, port: port, log: filepath.Join(dir, fmt.Sprintf("replica-%d.log", i))}
		reps[i].start(t)
	}
	defer func() {
		for _, r := range reps {
			r.proc.Stop(5 * time.Second)
		}
	}()
	for _, r := range reps {
		if err := r.waitServing(ctx); err != nil {
			t.Fatal(err)
		}
	}

	convs := []*parleyv1alpha1.Conversation{
		conversationOn(parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}}, "configmap"),
		conversationOn(parleyv1alpha1.HistorySpec{ObjectStore: &parleyv1alpha1.ObjectStoreHistory{
			Endpoint: "http://" + s3srv.Endpoint, Bucket: bucket, Prefix: "replicas", ForcePathStyle: true, Insecure: true,
			CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: "s3"},
		}}, "s3"),
	}
	// Replica 0 is reached through a proxy that drops the answer of every 40th append it
	// acknowledged: the batch is stored, the client retries it on replica 1.
	dropper, proxy := newAnswerDropper(reps[0].url(), 40)
	defer proxy.Close()
	urls := [2]string{proxy.URL, reps[1].url()}
	apps := make([]*appender, len(convs))
	for i, conv := range convs {
		if err := c.Create(ctx, conv); err != nil {
			t.Fatal(err)
		}
		if err := cluster.WaitFor(ctx, c, conv, func(cv *parleyv1alpha1.Conversation) bool {
			return meta.IsStatusConditionTrue(cv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
		}); err != nil {
			t.Fatalf("conversation %s: history not available: %v", conv.Name, err)
		}
		apps[i] = &appender{namespace: namespace, name: conv.Name}
		for j, u := range urls {
			// Each attempt goes to one replica once; the writer retries on the other itself.
			cl, err := parleyclient.New(parleyclient.Options{
				URL: u, Token: token, Retries: -1,
				HTTPClient: &http.Client{Timeout: 10 * time.Second},
			})
			if err != nil {
				t.Fatal(err)
			}
			apps[i].clients[j] = cl
		}
	}

	// Writers on both conversations until every kill is done and the bar is passed.
	stop := make(chan struct{})
	errs := make(chan error, writers*len(apps))
	var wg sync.WaitGroup
	writing := time.Now()
	for _, a := range apps {
		for w := range writers {
			wg.Go(func() { errs <- a.write(ctx, w, stop) })
		}
	}
	least := func() int64 {
		n := apps[0].acked.Load()
		for _, a := range apps[1:] {
			n = min(n, a.acked.Load())
		}
		return n
	}
	waitAcked := func(n int64) error {
		for least() < n {
			if ctx.Err() != nil {
				return fmt.Errorf("waiting for %d acknowledged appends per conversation: %w", n, ctx.Err())
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	killErr := func() error {
		if err := waitAcked(afterRestart); err != nil {
			return err
		}
		for _, v := range victims {
			r := reps[v]
			at := least()
			r.proc.Kill()
			t.Logf("SIGKILLed replica %d (pid %d) at %d acknowledged appends per conversation (at least)", v, r.proc.PID(), at)
			r.start(t)
			if err := r.waitServing(ctx); err != nil {
				return err
			}
			t.Logf("replica %d serves again (pid %d) at %d appends", v, r.proc.PID(), least())
			if err := waitAcked(least() + afterRestart); err != nil {
				return err
			}
		}
		return waitAcked(minAppends)
	}()
	close(stop)
	wg.Wait()
	close(errs)
	elapsed := time.Since(writing)
	if killErr != nil {
		t.Fatal(killErr)
	}
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	stores := &historystore.Stores{ConfigMaps: c, Secrets: c}
	for i, conv := range convs {
		a := apps[i]
		t.Run(conv.Name, func(t *testing.T) {
			verify(ctx, t, c, stores, conv, a, reps[1].url(), token)
			t.Logf("%d appends acknowledged in %s through both replicas (%d attempts; retried after: %d cut connections, %d refused, answers %v); "+
				"%d batches of unknown outcome retried, %d of them provably stored before the retry (a higher sequence was acknowledged first)",
				a.acked.Load(), elapsed.Round(time.Millisecond), a.attempts.Load(), a.cut.Load(), a.refused.Load(), a.problemCounts(),
				uncertainCount(a), storedBeforeRetry(a.acks))
		})
	}
	cut := int64(0)
	for _, a := range apps {
		cut += a.cut.Load()
	}
	t.Logf("the proxy dropped the answers of %d acknowledged appends to replica 0", dropper.dropped.Load())
	if cut <= dropper.dropped.Load() {
		t.Errorf("no append was cut mid-flight by %d kills (%d cut connections, %d of them the proxy's): the test did not test what it claims",
			len(victims), cut, dropper.dropped.Load())
	}
	if dropper.dropped.Load() == 0 {
		t.Error("the proxy dropped no acknowledged answer: the retry of a stored batch was not tested")
	}
}

// verify checks one conversation after the run: the store's epoch holds every record once
// with gap-free sequences; the API's pages hold every acknowledged message exactly once, at
// the sequence its append was answered with, and nothing else; status counts them.
func verify(ctx context.Context, t *testing.T, c client.Client, stores *historystore.Stores, conv *parleyv1alpha1.Conversation, a *appender, apiURL, token string) {
	if err := c.Get(ctx, client.ObjectKeyFromObject(conv), conv); err != nil {
		t.Fatal(err)
	}
	h, err := stores.Open(ctx, conv, false)
	if err != nil {
		t.Fatal(err)
	}
	head, err := h.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]uint64{}
	var last uint64
	for e, err := range history.All(ctx, h, head.Epoch, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq != last+1 {
			t.Errorf("store: sequence %d follows %d (a gap)", e.Seq, last)
		}
		if prev, dup := records[e.ID]; dup {
			t.Errorf("store: record %s stored twice, at %d and %d", e.ID, prev, e.Seq)
		}
		records[e.ID], last = e.Seq, e.Seq
	}
	if last != head.Sequence {
		t.Errorf("store: read %d entries, head says %d", last, head.Sequence)
	}

	api, err := parleyclient.New(parleyclient.Options{URL: apiURL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]uint64{}
	twice := 0
	var prevSeq int64
	for after := uint64(0); ; {
		page, err := api.Messages(ctx, namespace, conv.Name, after, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			if seq, dup := stored[m.ID]; dup {
				twice++
				t.Errorf("message %s stored twice, at %d and %d", m.ID, seq, m.Seq)
			}
			if m.Seq <= prevSeq {
				t.Errorf("message %s at %d after %d", m.ID, m.Seq, prevSeq)
			}
			stored[m.ID], prevSeq = uint64(m.Seq), m.Seq
		}
		if page.Next == 0 {
			break
		}
		after = page.Next
	}

	acked := map[string]bool{}
	lost, moved := 0, 0
	for _, ak := range a.acks {
		if len(ak.seqs) != len(ak.ids) {
			t.Fatalf("an append of %d messages was answered with %d sequences", len(ak.ids), len(ak.seqs))
		}
		for i, id := range ak.ids {
			acked[id] = true
			seq, ok := stored[id]
			switch {
			case !ok:
				lost++
				t.Errorf("acknowledged message %s (sequence %d) is not stored", id, ak.seqs[i])
			case seq != ak.seqs[i]:
				moved++
				t.Errorf("acknowledged message %s was answered with sequence %d but is stored at %d", id, ak.seqs[i], seq)
			}
		}
	}
	var extra []string
	for id := range stored {
		if !acked[id] {
			extra = append(extra, id)
		}
	}
	slices.Sort(extra)
	if len(extra) > 0 {
		t.Errorf("%d stored messages were never acknowledged (every batch is retried until it is): %s", len(extra), strings.Join(extra[:min(len(extra), 10)], ", "))
	}
	if len(a.acks) < minAppends {
		t.Errorf("%d acknowledged appends, want at least %d", len(a.acks), minAppends)
	}
	t.Logf("%s: %d acknowledged appends (%d messages); stored %d messages, %d records at sequences 1..%d of epoch %d; lost %d, stored twice %d, at another sequence %d",
		conv.Name, len(a.acks), len(acked), len(stored), len(records), head.Sequence, head.Epoch, lost, twice, moved)

	// The leader (whichever replica holds the lease now) counts them in status.
	if err := cluster.WaitFor(ctx, c, conv, func(cv *parleyv1alpha1.Conversation) bool {
		return cv.Status.History != nil && cv.Status.History.Messages == int64(len(acked))
	}); err != nil {
		got := int64(-1)
		if conv.Status.History != nil {
			got = conv.Status.History.Messages
		}
		t.Errorf("status.history.messages is %d, want %d: %v", got, len(acked), err)
	}
}

func uncertainCount(a *appender) int {
	n := 0
	for _, ak := range a.acks {
		if ak.uncertain {
			n++
		}
	}
	return n
}

func conversationOn(h parleyv1alpha1.HistorySpec, name string) *parleyv1alpha1.Conversation {
	return &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: parleyv1alpha1.ConversationSpec{
			History:      h,
			SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "You answer questions; two replicas serve you."},
		},
	}
}

// logTail is the last n lines of the log at path: the test's folder goes with the test.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
