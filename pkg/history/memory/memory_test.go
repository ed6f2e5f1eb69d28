package memory_test

import (
	"testing"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/historytest"
	"github.com/parley-dev/parley/pkg/history/memory"
)

func TestConformance(t *testing.T) {
	t.Run("plain", func(t *testing.T) { conformance(t, false) })
	t.Run("compressed", func(t *testing.T) { conformance(t, true) })
}

func conformance(t *testing.T, compressed bool) {
	// One map shared by every "store" of the test, like one server.
	shared := memory.New(memory.Options{CompressSegments: compressed})
	historytest.Run(t, historytest.Harness{
		New: func(*testing.T) history.Store { return memory.Reopen(shared) },
		NewWithLimit: func(_ *testing.T, maxBytes int64) history.Store {
			return memory.New(memory.Options{MaxHistoryBytes: maxBytes})
		},
		LargeRecords: true,
	})
}
