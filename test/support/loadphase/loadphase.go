// Package loadphase runs the closed-loop load phases of the throughput benchmarks: n writers,
// each sending its next operation once the previous one answered, for a fixed time, and
// sums what the phases measured.
package loadphase

import (
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/test/support/benchcpu"
)

// Result is what one mode measured over all its phases.
type Result struct {
	Ops       int64
	Elapsed   time.Duration
	Latencies []time.Duration
	// CPU is the CPU time each measured process spent during the phases (RunMeasured).
	CPU map[string]time.Duration
}

// Add sums another phase of the same mode into r.
func (r *Result) Add(o Result) {
	r.Ops += o.Ops
	r.Elapsed += o.Elapsed
	r.Latencies = append(r.Latencies, o.Latencies...)
	for name, d := range o.CPU {
		if r.CPU == nil {
			r.CPU = map[string]time.Duration{}
		}
		r.CPU[name] += d
	}
}

// CPUPerOp is the CPU time a process spent per operation, in milliseconds.
func (r *Result) CPUPerOp(name string) float64 {
	if r.Ops == 0 {
		return 0
	}
	return float64(r.CPU[name]) / float64(time.Millisecond) / float64(r.Ops)
}

// RunMeasured is Run followed by a pause of settle (for what the phase set off to finish),
// with the CPU time each of procs spent over both: the phase's own work and whatever else
// those processes did meanwhile.
func RunMeasured(tb testing.TB, n int, d, settle time.Duration, op func(w int) error, procs benchcpu.Processes) Result {
	tb.Helper()
	before := procs.Sample()
	res := Run(tb, n, d, op)
	time.Sleep(settle)
	after := procs.Sample()
	res.CPU = make(map[string]time.Duration, len(procs))
	for name := range procs {
		res.CPU[name] = after[name] - before[name]
	}
	return res
}

// Rate is operations per second.
func (r *Result) Rate() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

// QuantileMs is the latency quantile q (0.5, 0.99) in milliseconds.
func (r *Result) QuantileMs(q float64) float64 {
	if len(r.Latencies) == 0 {
		return 0
	}
	slices.Sort(r.Latencies)
	return float64(r.Latencies[int(float64(len(r.Latencies)-1)*q)]) / float64(time.Millisecond)
}

// Run runs op from n writers for d, each op after the previous one of its writer; an error
// fails the benchmark.
func Run(tb testing.TB, n int, d time.Duration, op func(w int) error) Result {
	tb.Helper()
	var mu sync.Mutex
	var res Result
	var failed atomic.Value
	deadline := time.Now().Add(d)
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
			res.Latencies = append(res.Latencies, lat...)
			res.Ops += int64(len(lat))
			mu.Unlock()
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
	return res
}

// LoadAverage is the machine's 1, 5 and 15 minute load averages, for the benchmark's log.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
