package metrics

import "github.com/prometheus/client_golang/prometheus"

// Compactions counts compaction jobs by strategy and result (compacted, nothing,
// stale-checkpoint, superseded, failed).
var Compactions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_compactions_total",
	Help: "Compaction jobs run by the compaction runner, by strategy and result.",
}, []string{"strategy", "result"})

// CompactionDuration is the time from the start of a job to its new epoch.
var CompactionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "parley_compaction_duration_seconds",
	Help:    "Time from the start of a compaction job to its new epoch, by strategy.",
	Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
}, []string{"strategy"})

// CompactionTokensSaved sums the tokens compactions removed from contexts.
var CompactionTokensSaved = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_compaction_tokens_saved_total",
	Help: "Tokens removed from conversation contexts by compaction, by strategy.",
}, []string{"strategy"})

// CompactionSummarizerTokens sums the tokens summarizer providers reported for the summaries
// they wrote, by provider and kind (input, output, cache_read, cache_write).
var CompactionSummarizerTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_compaction_summarizer_tokens_total",
	Help: "Tokens summarizer providers reported for the summaries they wrote, by provider and kind.",
}, []string{"provider", "kind"})
