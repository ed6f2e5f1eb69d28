package apibench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// Flags (after -args): the length of one phase and how many rounds of (raw, store, API) phases
// alternate, so the load of the shared machine falls on the three alike.
var (
	phaseFlag  = flag.Duration("phase", 3*time.Second, "length of one phase")
	roundsFlag = flag.Int("rounds", 3, "rounds of (raw, store, API) phases")
	// settleFlag is a pause after each phase: what an API phase sets off (the batched activity
	// writes and the reconciles they wake) finishes before the next phase is timed.
	settleFlag = flag.Duration("settle", 2*time.Second, "pause after each phase")
)

// rawWriters is the raw phase's writers (one key each): the backend's conditional-write rate.
const rawWriters = 64

// shape is a load: conversations × clients per conversation, each client appending one
// message at a time and waiting for the answer.
type shape struct{ conversations, clients int }

var shapes = []shape{{1, 1}, {1, 16}, {1, 64}, {64, 1}}

// BenchmarkSessionAPI: appends of 1 KiB messages through the Session API (pkg/client over
// TLS, the server in this process with TokenReview and SubjectAccessReview on envtest),
// beside the same appends made directly to the manager's store (the record the API would
// write, with the same conflict check) and raw conditional 1 KiB writes (64 writers on 64 keys)
// on the same backend, phases alternating in the same run. One op is the whole measurement.
func BenchmarkSessionAPI(b *testing.B) {
	for _, backend := range []string{"configmap", "s3"} {
		for _, sh := range shapes {
			b.Run(fmt.Sprintf("%s/conversations=%d/clients=%d", backend, sh.conversations, sh.clients), func(b *testing.B) {
				for range b.N {
					runShape(b, backend, sh)
				}
			})
		}
	}
}

var runSeq atomic.Int64

func runShape(b *testing.B, backend string, sh shape) {
	ctx := context.Background()
	run := fmt.Sprintf("%s-%d-%d-%d", backend, sh.conversations, sh.clients, runSeq.Add(1))
	apiConvs := createConversations(b, backend, run+"-api", sh.conversations)
	storeConvs := createConversations(b, backend, run+"-store", sh.conversations)
	writers := sh.conversations * sh.clients

	clients := make([]*parleyclient.Client, writers)
	for w := range clients {
		c, err := parleyclient.New(parleyclient.Options{URL: apiURL, Token: token, CA: apiCA, Retries: -1})
		if err != nil {
			b.Fatal(err)
		}
		clients[w] = c
	}
	handles := make([]history.History, sh.conversations)
	for i, conv := range storeConvs {
		h, err := stores.Open(ctx, conv, false)
		if err != nil {
			b.Fatal(err)
		}
		handles[i] = h
	}
	var seq atomic.Int64
	apiAppend := func(w int) error {
		conv := apiConvs[w/sh.clients]
		_, err := clients[w].Append(ctx, namespace, conv.Name, []conversation.Message{message(run, seq.Add(1))})
		return err
	}
	storeAppend := func(w int) error {
		m := message(run, seq.Add(1))
		rec, err := journal.MessageRecord(&m)
		if err != nil {
			return err
		}
		_, err = handles[w/sh.clients].AppendWith(ctx, []history.Record{rec}, history.AppendOptions{Same: journal.SameMessage})
		return err
	}
	raw := newRaw(b, backend, run)

	b.Logf("load average before: %s", loadAverage())
	var rawRes, storeRes, apiRes result
	for range *roundsFlag {
		rawRes.add(runPhase(b, rawWriters, raw.write))
		storeRes.add(runPhase(b, writers, storeAppend))
		apiRes.add(runPhase(b, writers, apiAppend))
	}
	b.Logf("load average after: %s", loadAverage())
	b.StopTimer()
	b.ReportMetric(apiRes.rate(), "api-appends/s")
	b.ReportMetric(ms(apiRes.quantile(0.5)), "api-p50-ms")
	b.ReportMetric(ms(apiRes.quantile(0.99)), "api-p99-ms")
	b.ReportMetric(storeRes.rate(), "store-appends/s")
	b.ReportMetric(ms(storeRes.quantile(0.5)), "store-p50-ms")
	b.ReportMetric(ms(storeRes.quantile(0.99)), "store-p99-ms")
	b.ReportMetric(rawRes.rate(), "raw-puts/s")
	b.ReportMetric(ms(rawRes.quantile(0.5)), "raw-p50-ms")
	b.ReportMetric(ms(rawRes.quantile(0.99)), "raw-p99-ms")
	b.ReportMetric(apiRes.rate()/storeRes.rate(), "api/store")
	b.ReportMetric(storeRes.rate()/rawRes.rate(), "store/raw")
}

// message is a user message with 1,000 bytes of text: its record is about 1 KiB.
func message(run string, n int64) conversation.Message {
	text := strings.Repeat("abcdefghij", 100)
	return conversation.Message{
		ID: fmt.Sprintf("%s-%d", run, n), Role: conversation.RoleUser,
		Blocks: []conversation.Block{{Type: conversation.BlockText, Text: text}},
	}
}

// createConversations creates n Conversations on backend and waits until their histories are
// available.
func createConversations(b *testing.B, backend, prefix string, n int) []*parleyv1alpha1.Conversation {
	ctx := context.Background()
	out := make([]*parleyv1alpha1.Conversation, n)
	for i := range out {
		spec := parleyv1alpha1.ConversationSpec{SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "benchmark"}}
		switch backend {
		case "configmap":
			maxBytes := resource.MustParse("64Mi")
			spec.History.ConfigMap = &parleyv1alpha1.ConfigMapHistory{MaxBytes: &maxBytes}
		case "s3":
			spec.History.ObjectStore = &parleyv1alpha1.ObjectStoreHistory{
				Endpoint: "http://" + s3srv.Endpoint, Bucket: bucket, Prefix: "histories", ForcePathStyle: true, Insecure: true,
				CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: s3Secret},
			}
		}
		conv := &parleyv1alpha1.Conversation{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s-%d", prefix, i)},
			Spec:       spec,
		}
		if err := harness.Create(ctx, conv); err != nil {
			b.Fatal(err)
		}
		out[i] = conv
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, conv := range out {
		for {
			if err := harness.Get(ctx, clientKey(conv), conv); err != nil {
				b.Fatal(err)
			}
			if meta.IsStatusConditionTrue(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s: no history after 2 minutes: %+v", conv.Name, conv.Status.Conditions)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return out
}

// result is what one kind of phase measured over all its rounds.
type result struct {
	ops       int64
	elapsed   time.Duration
	latencies []time.Duration
}

func (r *result) add(o result) {
	r.ops += o.ops
	r.elapsed += o.elapsed
	r.latencies = append(r.latencies, o.latencies...)
}

func (r *result) rate() float64 { return float64(r.ops) / r.elapsed.Seconds() }

func (r *result) quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	slices.Sort(r.latencies)
	return r.latencies[int(float64(len(r.latencies)-1)*q)]
}

// runPhase runs op from n goroutines, each op after the previous one of its writer, for the
// phase's length.
func runPhase(b *testing.B, n int, op func(w int) error) result {
	var mu sync.Mutex
	var res result
	var failed atomic.Value
	deadline := time.Now().Add(*phaseFlag)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			var lat []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := op(w); err != nil {
					failed.Store(err)
					return
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			res.latencies = append(res.latencies, lat...)
			res.ops += int64(len(lat))
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	time.Sleep(*settleFlag)
	return res
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
