// Package benchcpu adds CPU-time metrics to Go benchmarks. On the shared 2-core machines the
// wall clock also counts time spent waiting for a core; the process's CPU time (user + system)
// counts the work done, so the benchmarks report both.
package benchcpu

import (
	"testing"
	"time"
)

// Meter measures the CPU time a benchmark loop spends.
type Meter struct{ start time.Duration }

// Start begins measuring; call it right before the timed loop.
func Start() Meter { return Meter{start: processCPUTime()} }

// Report adds cpu-ns/op and, when amountPerOp > 0, the rate amountPerOp·N per CPU second under
// unit (e.g. MB/cpu-s with amountPerOp in MB, tokens/cpu-s with tokens). Where CPU time cannot
// be read, nothing is reported rather than a wrong figure.
func (m Meter) Report(b *testing.B, amountPerOp float64, unit string) {
	b.Helper()
	spent := processCPUTime() - m.start
	if m.start <= 0 || spent <= 0 {
		return
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if amountPerOp > 0 {
		b.ReportMetric(amountPerOp*float64(b.N)/spent.Seconds(), unit)
	}
}
