package compaction

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/pkg/conversation/compact"
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

// metered counts the tokens the provider reports for every summary s writes, including those
// a compaction then does not use (a summary too long to save anything, an attempt redone
// after a conflict): they were paid for all the same.
func metered(provider string, s compact.Summarizer) compact.Summarizer {
	return compact.SummarizerFunc(func(ctx context.Context, req compact.SummaryRequest) (compact.Summary, error) {
		summary, err := s.Summarize(ctx, req)
		if err == nil {
			u := summary.Usage
			for kind, n := range map[string]int64{"input": u.Input, "output": u.Output, "cache_read": u.CacheRead, "cache_write": u.CacheWrite} {
				if n > 0 {
					metrics.CompactionSummarizerTokens.WithLabelValues(provider, kind).Add(float64(n))
				}
			}
		}
		return summary, err
	})
}
