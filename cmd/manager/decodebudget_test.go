package main

import (
	"math"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

func TestDecodeBudgetBytes(t *testing.T) {
	for name, tt := range map[string]struct{ flag, memLimit, want int64 }{
		"the shipped 768 MiB limit": {0, 768 << 20, 192 << 20},
		"a large limit":             {0, 4 << 30, 1 << 30},
		"a small limit keeps room":  {0, 256 << 20, minDecodeBudget},
		"no limit":                  {0, math.MaxInt64, history.DefaultDecodeBudget},
		"the flag wins":             {64 << 20, 768 << 20, 64 << 20},
	} {
		if got := decodeBudgetBytes(tt.flag, tt.memLimit); got != tt.want {
			t.Errorf("%s: %d, want %d", name, got, tt.want)
		}
	}
}
