package sessionapi

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/wire"
)

// A history whose stored bytes failed verification is not a transient failure: the answer is
// 500 history-corrupt without Retry-After, so a client does not retry in a loop (each retry
// would read the hostile bytes again). A store that is down stays 503 with Retry-After.
func TestStoreProblemOfACorruptHistory(t *testing.T) {
	for name, tt := range map[string]struct {
		err        error
		status     int
		typ        string
		retryAfter bool
	}{
		"corrupt":     {fmt.Errorf("segment: %w", history.ErrCorrupt), 500, wire.ProblemHistoryCorrupt, false},
		"unavailable": {fmt.Errorf("get: %w", history.ErrUnavailable), 503, wire.ProblemUnavailable, true},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeProblem(rec, storeProblem(tt.err), 0)
			p := storeProblem(tt.err)
			if rec.Code != tt.status || p.Type != tt.typ {
				t.Fatalf("answer %d %s, want %d %s", rec.Code, p.Type, tt.status, tt.typ)
			}
			if got := rec.Header().Get("Retry-After") != ""; got != tt.retryAfter {
				t.Fatalf("Retry-After sent: %v, want %v", got, tt.retryAfter)
			}
		})
	}
}
