package benchcpu

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ClockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat and /proc/stat (100 on Linux).
const ClockTicks = 100

// ProcessCPU is another process's user+system CPU time so far, from /proc/<pid>/stat; 0 where
// it cannot be read (not Linux, or the process is gone).
func ProcessCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command is in parentheses and may hold spaces: fields start after the last ')'.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / ClockTicks
}

// ChildPID finds a direct child of this process by command name (the envtest etcd and
// kube-apiserver, versitygw), or 0.
func ChildPID(comm string) int {
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(raw)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		f := strings.Fields(s[closing+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if ppid == self && s[open+1:closing] == comm {
			return pid
		}
	}
	return 0
}

// Processes are named processes whose CPU time a benchmark phase reports.
type Processes map[string]int

// Sample reads each process's CPU time so far.
func (ps Processes) Sample() map[string]time.Duration {
	out := make(map[string]time.Duration, len(ps))
	for name, pid := range ps {
		out[name] = ProcessCPU(pid)
	}
	return out
}
