// Package historytest is the conformance suite every history.Store backend
// must pass. A backend's test calls Run with a Harness, and calls
// RunChildIfRequested first thing in its TestMain so the suite can re-execute
// the test binary as separate writer processes.
package historytest

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// Harness describes the backend under test.
type Harness struct {
	// New returns a new store on the backend, as a separate process would
	// open it (its own client, no shared handles). The suite closes it.
	New func(t *testing.T) history.Store
	// NewWithLimit returns a store whose conversations hold at most maxBytes.
	NewWithLimit func(t *testing.T, maxBytes int64) history.Store
	// ChildEnv are the environment variables a re-executed test binary needs
	// to reach the same backend (see RunChildIfRequested). nil means the
	// backend cannot be shared between processes (the in-memory store): the
	// multi-process tests are skipped, and say so.
	ChildEnv []string
	// LargeRecords: the backend stores 4 MiB records. Otherwise it must
	// refuse them with ErrTooLarge and an error that names TooLargeHint.
	LargeRecords bool
	TooLargeHint string
}

// conversationName returns a fresh, DNS-safe conversation name.
func conversationName(t *testing.T) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	base := strings.ToLower(t.Name())
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	base = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, base)
	if len(base) > 30 {
		base = base[:30]
	}
	return strings.Trim(base, "-") + "-" + hex.EncodeToString(b)
}

func newStore(t *testing.T, h Harness) history.Store {
	t.Helper()
	s := h.New(t)
	t.Cleanup(func() { _ = s.Close() })
	return s
}
