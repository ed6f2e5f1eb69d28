package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// BenchmarkBytesPerAppend: bytes sent to the server per append of one 1 KiB
// message, by one writer (no batching: the worst case), as the history
// grows from 10 to 100,000 messages. At each length it makes 40 unmeasured
// appends, measures the next 200, then fills on to the next length. The figures are reported
// as metrics "B/append@<length>"; ns/op is meaningless here.
func BenchmarkBytesPerAppend(b *testing.B) {
	lengths := []int{10, 100, 1000, 10000, 100000}
	for _, t := range []target{targets[0], targets[1]} {
		b.Run(t.name, func(b *testing.B) {
			if t.name == "configmap" && !firstRun(b.Name()) {
				// The figure is deterministic, and every run leaves 100 MB of
				// ConfigMaps and their revisions in etcd: a second run in the
				// same process fills etcd's 2 GiB quota.
				b.Skip("measured once per process")
			}
			for range b.N {
				conversation := conversationName("bytes")
				a := t.open(b, conversation, 0, 1<<10)
				measureGrowth(b, a, lengths, 200)
				sa := a.(*storeAppender)
				if err := sa.store.Delete(context.Background(), conversation); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The naive baseline writes the whole history each time; a few appends
	// per length are enough, and 100,000 messages (100 MiB per PUT) only on S3.
	b.Run("naive-s3", func(b *testing.B) {
		for range b.N {
			for _, n := range lengths {
				a := openNaiveS3(b, conversationName("bytes-naive"), n, 1<<10)
				measureGrowth(b, a, []int{n}, 3)
			}
		}
	})
}

// warmUp exceeds the 32 tail objects after which a tail is sealed.
const warmUp = 40

// measureGrowth fills a to each length and reports the bytes written per
// append over the next `sample` appends.
func measureGrowth(b *testing.B, a appender, lengths []int, sample int) {
	ctx := context.Background()
	filled := 0
	if sa, ok := a.(*storeAppender); ok {
		for _, n := range lengths {
			for filled < n {
				batch := min(500, n-filled)
				recs := make([]history.Record, 0, batch)
				for i := range batch {
					recs = append(recs, record(fmt.Sprintf("fill-%d", filled+i), 1<<10))
				}
				if _, err := sa.h.Append(ctx, recs); err != nil {
					b.Fatal(err)
				}
				filled += batch
			}
			// Warm up with single appends first, so the seal of the fill's
			// large batches is not charged to the measured appends.
			for i := range warmUp {
				if err := a.append(ctx, record(fmt.Sprintf("w-%d-%d", n, i), 1<<10)); err != nil {
					b.Fatal(err)
				}
			}
			before := a.bytesWritten()
			for i := range sample {
				if err := a.append(ctx, record(fmt.Sprintf("m-%d-%d", n, i), 1<<10)); err != nil {
					b.Fatal(err)
				}
			}
			filled += warmUp + sample
			b.ReportMetric(float64(a.bytesWritten()-before)/float64(sample), fmt.Sprintf("B/append@%d", n))
		}
		return
	}
	before := a.bytesWritten()
	for i := range sample {
		if err := a.append(ctx, record(fmt.Sprintf("m-%d", i), 1<<10)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(a.bytesWritten()-before)/float64(sample), fmt.Sprintf("B/append@%d", lengths[0]))
}

var (
	ranMu sync.Mutex
	ran   = map[string]bool{}
)

// firstRun reports whether a benchmark runs for the first time in this process (-count > 1).
func firstRun(name string) bool {
	ranMu.Lock()
	defer ranMu.Unlock()
	first := !ran[name]
	ran[name] = true
	return first
}
