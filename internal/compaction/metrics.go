package compaction

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-dev/parley/internal/metrics"
)

// observe counts a job by strategy and result and, for a new epoch, how long it took and
// what it saved.
func observe(out *Outcome, took time.Duration) {
	strategy := out.Strategy
	metrics.Compactions.WithLabelValues(strategy, string(out.Result)).Inc()
	if out.Result == ResultCompacted {
		metrics.CompactionDuration.With(prometheus.Labels{"strategy": strategy}).Observe(took.Seconds())
		metrics.CompactionTokensSaved.WithLabelValues(strategy).Add(float64(out.Record.TokensBefore - out.Record.TokensAfter))
	}
}
