package scale

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/parley-dev/parley/test/support/benchcpu"
)

// memStatus is a process's resident memory from /proc/<pid>/status, in bytes.
type memStatus struct {
	rss, hwm int64 // VmRSS, VmHWM (peak)
}

func readMem(pid int) (memStatus, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStatus{}, err
	}
	var m memStatus
	for line := range strings.SplitSeq(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) < 1 {
			continue
		}
		kb, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			m.rss = kb << 10
		case "VmHWM":
			m.hwm = kb << 10
		}
	}
	return m, nil
}

// cpuSeconds is a process's user+system CPU time so far, in seconds.
func cpuSeconds(pid int) float64 { return benchcpu.ProcessCPU(pid).Seconds() }

// machineCPU is the whole machine's busy and total CPU seconds from /proc/stat.
func machineCPU() (busy, total float64) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		total += x
		if i != 3 && i != 4 { // idle, iowait
			busy += x
		}
	}
	return busy / benchcpu.ClockTicks, total / benchcpu.ClockTicks
}

// machine describes where the benchmark ran.
func machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	var memTotal string
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(raw), "\n")
		memTotal = strings.Join(strings.Fields(line)[1:], " ")
	}
	return fmt.Sprintf("%d CPUs, %q, MemTotal %s", numCPU(), model, memTotal)
}

func numCPU() int {
	raw, err := os.ReadFile("/sys/fs/cgroup/cpu.max")
	if err == nil {
		f := strings.Fields(string(raw))
		if len(f) == 2 && f[0] != "max" {
			q, _ := strconv.ParseFloat(f[0], 64)
			p, _ := strconv.ParseFloat(f[1], 64)
			if p > 0 {
				return int(q / p)
			}
		}
	}
	n := 0
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		n = bytes.Count(raw, []byte("\nprocessor\t")) + 1
	}
	return n
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	return strings.Join(f[:3], " ")
}
