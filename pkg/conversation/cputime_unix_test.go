//go:build unix

package conversation

import (
	"syscall"
	"time"
)

// processCPUTime is the CPU time (user + system) this process has used. On a shared machine
// it measures the work done, where wall-clock time also counts waiting for a core.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
