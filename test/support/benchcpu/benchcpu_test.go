package benchcpu

import "testing"

func TestProcessCPUTimeAdvances(t *testing.T) {
	before := processCPUTime()
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	if x == 0 {
		t.Fatal("loop optimised away")
	}
	if after := processCPUTime(); after <= before {
		t.Fatalf("CPU time did not advance over a busy loop: %v -> %v", before, after)
	}
}

func BenchmarkMeterReports(b *testing.B) {
	m := Start()
	for b.Loop() {
		_ = processCPUTime()
	}
	m.Report(b, 1, "calls/cpu-s")
}
