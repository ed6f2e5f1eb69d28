package bench

import (
	"context"
	"flag"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
	"github.com/parley-dev/parley/test/support/loadphase"
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

	b.Logf("load average before: %s", loadphase.LoadAverage())
	var rawRes, storeRes loadphase.Result
	var before, after engine.Stats
	for range *roundsFlag {
		rawRes.Add(loadphase.Run(b, convWriters, *phaseFlag, raw))
		s0 := es.Stats()
		storeRes.Add(loadphase.Run(b, convWriters, *phaseFlag, appendOne))
		s1 := es.Stats()
		before.Writes, after.Writes = before.Writes+s0.Writes, after.Writes+s1.Writes
		before.Reads, after.Reads = before.Reads+s0.Reads, after.Reads+s1.Reads
		before.Lists, after.Lists = before.Lists+s0.Lists, after.Lists+s1.Lists
		before.WrittenBytes, after.WrittenBytes = before.WrittenBytes+s0.WrittenBytes, after.WrittenBytes+s1.WrittenBytes
	}
	b.Logf("load average after: %s", loadphase.LoadAverage())
	b.StopTimer()

	b.ReportMetric(rawRes.Rate(), "raw-puts/s")
	b.ReportMetric(rawRes.QuantileMs(0.5), "raw-p50-ms")
	b.ReportMetric(rawRes.QuantileMs(0.99), "raw-p99-ms")
	b.ReportMetric(storeRes.Rate(), "appends/s")
	b.ReportMetric(storeRes.QuantileMs(0.5), "p50-ms")
	b.ReportMetric(storeRes.QuantileMs(0.99), "p99-ms")
	b.ReportMetric(storeRes.Rate()/rawRes.Rate(), "rate-ratio")
	b.ReportMetric(storeRes.QuantileMs(0.99)/rawRes.QuantileMs(0.99), "p99-ratio")
	n := float64(storeRes.Ops)
	b.ReportMetric(float64(after.Writes-before.Writes)/n, "writes/append")
	b.ReportMetric(float64(after.Reads-before.Reads+after.Lists-before.Lists)/n, "reads/append")
	b.ReportMetric(float64(after.WrittenBytes-before.WrittenBytes)/n, "B-written/append")
}

// rawBody is 1 KiB of JSON that differs on every write (S3 ETags are content hashes).
func rawBody(w int, seq int64) []byte {
	data := record("", 1<<10).Data
	copy(data[9:], fmt.Sprintf("%d-%d ", w, seq))
	return data
}
