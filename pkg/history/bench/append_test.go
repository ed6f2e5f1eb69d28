package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAppend: appends/s and latency for 1, 16 and 64 concurrent
// writers, 1 KiB and 64 KiB messages, every target, starting from a history
// of 10 messages. One op is one acknowledged append of one message.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		for _, writers := range []int{1, 16, 64} {
			for _, t := range targets {
				b.Run(fmt.Sprintf("size=%dKiB/writers=%d/%s", size>>10, writers, t.name), func(b *testing.B) {
					runAppends(b, t, 10, size, writers)
				})
			}
		}
	}
}

// BenchmarkAppendAtHistory: the same with 1 KiB messages as the history
// grows, where the naive baseline falls behind. A ConfigMap cannot hold
// 1,000 messages of 1 KiB, so naive-configmap stops at 100.
func BenchmarkAppendAtHistory(b *testing.B) {
	for _, historyLen := range []int{10, 100, 1000, 10000} {
		for _, writers := range []int{1, 64} {
			for _, t := range targets {
				if t.name == "naive-configmap" && historyLen > 100 {
					continue
				}
				b.Run(fmt.Sprintf("history=%d/writers=%d/%s", historyLen, writers, t.name), func(b *testing.B) {
					runAppends(b, t, historyLen, 1<<10, writers)
				})
			}
		}
	}
}

// opened keeps one prefilled conversation per benchmark name: the framework
// calls a benchmark several times while it sizes b.N.
var (
	openedMu sync.Mutex
	opened   = map[string]appender{}
)

func openOnce(b *testing.B, t target, historyLen, size int) appender {
	openedMu.Lock()
	defer openedMu.Unlock()
	if a, ok := opened[b.Name()]; ok {
		return a
	}
	a := t.open(b, conversationName("bench"), historyLen, size)
	opened[b.Name()] = a
	return a
}

func runAppends(b *testing.B, t target, historyLen, size, writers int) {
	a := openOnce(b, t, historyLen, size)
	ctx := context.Background()
	latencies := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Value
	prefix := fmt.Sprintf("%d-%d", nowUnix(), b.N)
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				rec := record(fmt.Sprintf("%s-%d", prefix, i), size)
				t0 := time.Now()
				if err := a.append(ctx, rec); err != nil {
					failed.Store(err)
					return
				}
				latencies[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("append: %v", err)
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
	b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(ms(latencies[len(latencies)*99/100]), "p99-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
