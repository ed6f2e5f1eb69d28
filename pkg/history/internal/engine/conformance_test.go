package engine_test

import (
	"testing"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/historytest"
	"github.com/parley-dev/parley/pkg/history/memory"
)

// TestConformance runs the conformance suite over the in-memory backend here too, so the
// engine's own tests check every guarantee the suite names: `make mutate` runs only the
// mutated package's tests. The backends run the suite in their packages.
func TestConformance(t *testing.T) {
	shared := memory.New(memory.Options{})
	historytest.Run(t, historytest.Harness{
		New: func(*testing.T) history.Store { return memory.Reopen(shared) },
		NewWithLimit: func(_ *testing.T, maxBytes int64) history.Store {
			return memory.New(memory.Options{MaxHistoryBytes: maxBytes})
		},
		LargeRecords: true,
	})
}
