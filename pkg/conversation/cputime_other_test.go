//go:build !unix

package conversation

import "time"

// processCPUTime is unavailable here: the CPU-time metric is left out.
func processCPUTime() time.Duration { return 0 }
