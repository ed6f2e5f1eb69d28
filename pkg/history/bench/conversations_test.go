package bench

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

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

// Flags of BenchmarkConversations (after -args): how long each phase runs and how many rounds
// of raw PUTs and store appends alternate.
var (
	phaseFlag  = flag.Duration("phase", 3*time.Second, "BenchmarkConversations: length of one phase")
	roundsFlag = flag.Int("rounds", 3, "BenchmarkConversations: rounds of (raw, store) phases")
	// openBytesFlag overrides the backends' MaxOpenBytes (0: their default), to measure the
	// trade-off between the bytes an append rewrites and the seals it needs.
	openBytesFlag = flag.Int("open-bytes", 0, "MaxOpenBytes of the stores (0: the backend's default)")
)

// convWriters is the realistic load of a manager: many conversations, one agent each.
const convWriters = 64

// BenchmarkConversations: 64 conversations × 1 writer appending 1 KiB messages one at a time,
// against the rate of raw conditional 1 KiB writes on the same backend in the same run: 64
// writers on 64 keys, each a create (If-None-Match: * on S3) and then replaces of its own key
// with the version it last wrote (If-Match: <etag>; a ConfigMap merge patch carrying its
// resourceVersion), through the same client the store uses. That is the least a
// compare-and-swap log can cost per append; the store's ratio to it is the figure of issue 11.
//
// Raw and store phases alternate (-args -phase, -rounds) so that the load of the shared
// machine falls on both alike. One op is the whole measurement; ns/op means nothing.
func BenchmarkConversations(b *testing.B) {
	for _, t := range []struct {
		name  string
		store func(*testing.B) history.Store
	}{{"s3", newS3Store}, {"configmap", newConfigMapStore}} {
		b.Run(t.name, func(b *testing.B) {
			for range b.N {
				runConversations(b, t.store)
			}
		})
	}
}

// phaseResult is what one mode measured over all its phases.
type phaseResult struct {
	ops       int64
	elapsed   time.Duration
	latencies []time.Duration
}

func (r *phaseResult) add(o phaseResult) {
	r.ops += o.ops
	r.elapsed += o.elapsed
	r.latencies = append(r.latencies, o.latencies...)
}

func (r *phaseResult) rate() float64 { return float64(r.ops) / r.elapsed.Seconds() }

func (r *phaseResult) quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	slices.Sort(r.latencies)
	return r.latencies[int(float64(len(r.latencies)-1)*q)]
}

func runConversations(b *testing.B, newStore func(*testing.B) history.Store) {
	ctx := context.Background()
	store := newStore(b)
	keepUntilExit(store)
	es := store.(*engine.Store)
	run := fmt.Sprintf("conv-%d", nowUnix())

	// Raw: each writer its own mutable object (the "index" key of a conversation of its own:
	// the only key a ConfigMap history keeps mutable), created before timing.
	objects := make([]engine.Objects, convWriters)
	versions := make([]string, convWriters)
	for w := range convWriters {
		o, err := es.ObjectsOf(fmt.Sprintf("%s-raw-%d", run, w))
		if err != nil {
			b.Fatal(err)
		}
		if versions[w], err = o.Create(ctx, "index", rawBody(w, 0)); err != nil {
			b.Fatalf("raw create: %v", err)
		}
		objects[w] = o
	}
	var rawSeq atomic.Int64
	raw := func(w int) error {
		v, err := objects[w].Replace(ctx, "index", rawBody(w, rawSeq.Add(1)), versions[w])
		versions[w] = v // only writer w touches its object
		return err
	}

	// Store: one conversation per writer, opened (and created) before timing.
	handles := make([]history.History, convWriters)
	for w := range convWriters {
		var err error
		if handles[w], err = store.Open(ctx, fmt.Sprintf("%s-%d", run, w), history.OpenOptions{Create: true}); err != nil {
			b.Fatal(err)
		}
	}
	var appendSeq atomic.Int64
	appendOne := func(w int) error {
		_, err := handles[w].Append(ctx, []history.Record{record(fmt.Sprintf("m-%d", appendSeq.Add(1)), 1<<10)})
		return err
	}

	b.Logf("load average before: %s", loadAverage())
	var rawRes, storeRes phaseResult
	var before, after engine.Stats
	for range *roundsFlag {
		rawRes.add(runPhase(b, *phaseFlag, raw))
		s0 := es.Stats()
		storeRes.add(runPhase(b, *phaseFlag, appendOne))
		s1 := es.Stats()
		before.Writes, after.Writes = before.Writes+s0.Writes, after.Writes+s1.Writes
		before.Reads, after.Reads = before.Reads+s0.Reads, after.Reads+s1.Reads
		before.Lists, after.Lists = before.Lists+s0.Lists, after.Lists+s1.Lists
		before.WrittenBytes, after.WrittenBytes = before.WrittenBytes+s0.WrittenBytes, after.WrittenBytes+s1.WrittenBytes
	}
	b.Logf("load average after: %s", loadAverage())
	b.StopTimer()

	b.ReportMetric(rawRes.rate(), "raw-puts/s")
	b.ReportMetric(ms(rawRes.quantile(0.5)), "raw-p50-ms")
	b.ReportMetric(ms(rawRes.quantile(0.99)), "raw-p99-ms")
	b.ReportMetric(storeRes.rate(), "appends/s")
	b.ReportMetric(ms(storeRes.quantile(0.5)), "p50-ms")
	b.ReportMetric(ms(storeRes.quantile(0.99)), "p99-ms")
	b.ReportMetric(storeRes.rate()/rawRes.rate(), "rate-ratio")
	b.ReportMetric(float64(storeRes.quantile(0.99))/float64(rawRes.quantile(0.99)), "p99-ratio")
	n := float64(storeRes.ops)
	b.ReportMetric(float64(after.Writes-before.Writes)/n, "writes/append")
	b.ReportMetric(float64(after.Reads-before.Reads+after.Lists-before.Lists)/n, "reads/append")
	b.ReportMetric(float64(after.WrittenBytes-before.WrittenBytes)/n, "B-written/append")
}

// runPhase runs op from convWriters goroutines, each op after the previous one of its
// writer, for d.
func runPhase(b *testing.B, d time.Duration, op func(w int) error) phaseResult {
	var mu sync.Mutex
	var res phaseResult
	var failed atomic.Value
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range convWriters {
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
	return res
}

// rawBody is 1 KiB of JSON that differs on every write (S3 ETags are content hashes).
func rawBody(w int, seq int64) []byte {
	data := record("", 1<<10).Data
	copy(data[9:], fmt.Sprintf("%d-%d ", w, seq))
	return data
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
