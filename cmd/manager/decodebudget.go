package main

import (
	"math"
	"runtime/debug"

	"github.com/parley-dev/parley/pkg/history"
)

// decodeBudgetShare: of the Go memory limit (GOMEMLIMIT, which the Deployment sets to the
// container's memory limit), the part decodes of stored history may take at once. The rest is
// the informer cache, the views, the Session API's bodies in flight and the GC's headroom;
// docs/security.md says what the budget covers.
const decodeBudgetShare = 4

// minDecodeBudget keeps room to decode one object of the largest size (a 64 MiB S3 object,
// counted with what decoding it holds) under a small memory limit.
const minDecodeBudget = 160 << 20

// decodeBudgetBytes is the --history-decode-budget to use: the flag when set, else a quarter of
// the Go memory limit memLimit (math.MaxInt64 when none is set), and never below
// minDecodeBudget; with no limit, history.DefaultDecodeBudget.
func decodeBudgetBytes(flag, memLimit int64) int64 {
	switch {
	case flag > 0:
		return flag
	case memLimit <= 0 || memLimit == math.MaxInt64:
		return history.DefaultDecodeBudget
	default:
		return max(memLimit/decodeBudgetShare, minDecodeBudget)
	}
}

// newDecodeBudget is the budget every history store of the manager shares.
func newDecodeBudget(o options) *history.DecodeBudget {
	return history.NewDecodeBudget(decodeBudgetBytes(o.decodeBudget, debug.SetMemoryLimit(-1)), 0)
}
