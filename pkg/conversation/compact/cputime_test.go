package compact

import (
	"syscall"
	"testing"
	"time"
)

// cpuClock measures the CPU time (user + system) this process spends, which on a shared,
// busy machine says more about the cost of code than wall time does: a benchmark that waits
// for a core is slow on the wall clock but not on this one.
type cpuClock struct{ start time.Duration }

func startCPUClock() cpuClock { return cpuClock{start: processCPUTime()} }

// report adds cpu-ns/op and, when tokens > 0, tokens per CPU second.
func (c cpuClock) report(b *testing.B, tokens int) {
	b.Helper()
	spent := processCPUTime() - c.start
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if tokens > 0 {
		b.ReportMetric(float64(tokens)*float64(b.N)/spent.Seconds(), "tokens/cpu-s")
	}
}

func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
