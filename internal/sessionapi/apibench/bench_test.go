package apibench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
	"github.com/parley-dev/parley/test/support/loadphase"
	"github.com/parley-dev/parley/test/support/repopath"
)

// Flags (after -args): the length of one phase and how many rounds of (raw, store, API) phases
// alternate, so the load of the shared machine falls on the three alike.
var (
	phaseFlag  = flag.Duration("phase", 3*time.Second, "length of one phase")
	roundsFlag = flag.Int("rounds", 3, "rounds of (raw, store, API) phases")
	// settleFlag is a pause after each phase: what an API phase sets off (the batched activity
	// writes and the reconciles they wake) finishes before the next phase is timed.
	settleFlag = flag.Duration("settle", 2*time.Second, "pause after each phase")
	// conversationRateFlag raises the per-conversation rate limit for the shapes that write one
	// conversation with many clients: past the default (0: the manager's) they measure the 429s.
	conversationRateFlag = flag.Float64("conversation-rate", 0, "per-conversation requests/s (0: the manager's default)")
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
	lag := newStatusLag()
	stopLag, err := lag.follow(ctx, informers)
	if err != nil {
		b.Fatal(err)
	}
	defer stopLag()
	apiAppend := func(w int) error {
		conv := apiConvs[w/sh.clients]
		res, err := clients[w].Append(ctx, namespace, conv.Name, []conversation.Message{message(run, seq.Add(1))})
		if err == nil && len(res.Sequences) > 0 {
			lag.acked(conv.Name, res.Sequences[len(res.Sequences)-1], time.Now())
		}
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

	b.Logf("messages: -message %s; load average before: %s", *messageFlag, loadphase.LoadAverage())
	var rawRes, storeRes, apiRes loadphase.Result
	requests := newAPIServerMetrics(apiServerHC, apiServerHost)
	var round int
	profiler := newAPIServerProfiler(apiServerHC, apiServerHost, *apiServerProfileFlag)
	phase := func(mode string, res *loadphase.Result, n int, op func(w int) error) {
		requests.around(b, mode, func() {
			profilePhase(b, mode, round, func() {
				profiler.around(b, mode == "api", func() { res.Add(runPhase(b, n, op)) })
			})
		})
	}
	for round = range *roundsFlag {
		phase("raw", &rawRes, rawWriters, raw.write)
		phase("store", &storeRes, writers, storeAppend)
		phase("api", &apiRes, writers, apiAppend)
	}
	b.Logf("load average after: %s", loadphase.LoadAverage())
	lag50, lag99, lagMax, missing := lag.report()
	b.Logf("status feedback: acknowledged append → status.history.sequence covering it, seen by the manager's informer: p50 %.0f ms, p99 %.0f ms, max %.0f ms; not shown %s after the last phase: %d",
		lag50, lag99, lagMax, *settleFlag, missing)
	results := map[string]*loadphase.Result{"raw": &rawRes, "store": &storeRes, "api": &apiRes}
	logCPU(b, []string{"raw", "store", "api"}, results)
	requests.log(b, results)
	b.StopTimer()
	b.ReportMetric(apiRes.Rate(), "api-appends/s")
	b.ReportMetric(apiRes.QuantileMs(0.5), "api-p50-ms")
	b.ReportMetric(apiRes.QuantileMs(0.99), "api-p99-ms")
	b.ReportMetric(storeRes.Rate(), "store-appends/s")
	b.ReportMetric(storeRes.QuantileMs(0.5), "store-p50-ms")
	b.ReportMetric(storeRes.QuantileMs(0.99), "store-p99-ms")
	b.ReportMetric(rawRes.Rate(), "raw-puts/s")
	b.ReportMetric(rawRes.QuantileMs(0.5), "raw-p50-ms")
	b.ReportMetric(rawRes.QuantileMs(0.99), "raw-p99-ms")
	b.ReportMetric(apiRes.Rate()/storeRes.Rate(), "api/store")
	b.ReportMetric(lag99, "status-lag-p99-ms")
	b.ReportMetric(storeRes.Rate()/rawRes.Rate(), "store/raw")
}

// messageFlag chooses the text of the benchmark's messages. Counting a message's tokens is
// part of an API append (the store phase does not count), and its cost depends on the text:
// real text splits into words, while one 1,000-letter word is a single piece for the
// byte-pair merges, their worst case (~3 times the CPU of prose per byte).
var messageFlag = flag.String("message", "text", "the messages' text: `text` (1,000-byte windows of prose and Go source) or word (one 1,000-letter word)")

// benchText is what the messages' windows are cut from: the tokens package's samples of prose
// and Go source.
var benchText = sync.OnceValue(func() string {
	root, err := repopath.Root()
	if err != nil {
		panic(err)
	}
	var sb strings.Builder
	for _, name := range []string{"prose.txt", "go-source.txt"} {
		b, err := os.ReadFile(filepath.Join(root, "pkg", "conversation", "tokens", "testdata", name))
		if err != nil {
			panic(err)
		}
		sb.Write(b)
	}
	return sb.String()
})

// message is a user message with 1,000 bytes of text: its record is about 1 KiB. With
// -message text, message n is the window of the samples at n × 97 bytes (mod their length),
// so consecutive messages differ.
func message(run string, n int64) conversation.Message {
	text := strings.Repeat("abcdefghij", 100)
	if *messageFlag == "text" {
		all := benchText()
		at := int(n*97) % (len(all) - 1000)
		text = strings.ToValidUTF8(all[at:at+1000], "?")
	}
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

// runPhase runs one phase of n writers, then lets what it set off (the batched activity writes
// and the reconciles they wake) finish before the next phase is timed. The CPU of the
// processes is counted over the phase and its settling, so the work an API phase sets off
// in the manager and the API server is counted with it.
func runPhase(b *testing.B, n int, op func(w int) error) loadphase.Result {
	return loadphase.RunMeasured(b, n, *phaseFlag, *settleFlag, op, procs)
}

// logCPU logs, per mode (in the order of modes), the CPU time each process spent per
// operation: where an API append's cost goes beyond the store's, or an aggregated append's
// beyond a direct one's.
func logCPU(b *testing.B, modes []string, results map[string]*loadphase.Result) {
	names := make([]string, 0, len(procs))
	for name := range procs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, mode := range modes {
		r := results[mode]
		var line strings.Builder
		total := 0.0
		for _, name := range names {
			ms := r.CPUPerOp(name)
			total += ms
			fmt.Fprintf(&line, " %s %.3f", name, ms)
		}
		b.Logf("CPU per op, %s phases (ms):%s; all %.3f", mode, line.String(), total)
		b.ReportMetric(total, mode+"-cpu-ms/op")
	}
}
