// Package metrics exposes Parley's Prometheus metrics on controller-runtime's registry. No metric
// carries message content or session ids: labels are bounded sets (phase, reason).
package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// Expirations counts sessions the controller expired, by reason (TTLExceeded, IdleTimeout).
var Expirations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_conversation_expirations_total",
	Help: "Conversations expired by the controller, by reason.",
}, []string{"reason"})

// phases are reported even when no Conversation is in them, so a dashboard's series never vanish.
var phases = []parleyv1alpha1.ConversationPhase{
	parleyv1alpha1.ConversationPending, parleyv1alpha1.ConversationActive, parleyv1alpha1.ConversationSuspended,
	parleyv1alpha1.ConversationRecovering, parleyv1alpha1.ConversationExpired, parleyv1alpha1.ConversationFailed,
}

var conversationsDesc = prometheus.NewDesc("parley_conversations",
	"Conversations by phase, read from the manager's cache at scrape time.", []string{"phase"}, nil)

var asleepDesc = prometheus.NewDesc("parley_agents_asleep",
	"Agents suspended while they wait for a person (AgentRunning reason Idle), read from the manager's cache at scrape time.", nil, nil)

// ConversationCollector counts Conversations by phase, and the agents asleep, when scraped, from the informer cache, so
// the gauge is never stale and costs nothing between scrapes.
type ConversationCollector struct {
	Reader client.Reader
	// Timeout bounds one scrape's list.
	Timeout time.Duration
}

// Describe implements prometheus.Collector.
func (c *ConversationCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- conversationsDesc
	ch <- asleepDesc
}

// Collect implements prometheus.Collector.
func (c *ConversationCollector) Collect(ch chan<- prometheus.Metric) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	list := &parleyv1alpha1.ConversationList{}
	if err := c.Reader.List(ctx, list); err != nil {
		ch <- prometheus.NewInvalidMetric(conversationsDesc, err)
		ch <- prometheus.NewInvalidMetric(asleepDesc, err)
		return
	}
	counts := map[parleyv1alpha1.ConversationPhase]int{}
	asleep := 0
	for i := range list.Items {
		if list.Items[i].AgentAsleep() {
			asleep++
		}
		p := list.Items[i].Status.Phase
		if p == "" {
			p = parleyv1alpha1.ConversationPending
		}
		counts[p]++
	}
	for _, p := range phases {
		ch <- prometheus.MustNewConstMetric(conversationsDesc, prometheus.GaugeValue, float64(counts[p]), string(p))
	}
	ch <- prometheus.MustNewConstMetric(asleepDesc, prometheus.GaugeValue, float64(asleep))
}

// Register adds Parley's metrics to controller-runtime's registry, served on /metrics.
func Register(reader client.Reader) {
	ctrlmetrics.Registry.MustRegister(Expirations, HistoriesCreated, StoreErrors, CheckpointsCreated, Snapshots,
		SnapshotBytes, ExpiryLateness, Compactions, CompactionDuration, CompactionTokensSaved, CompactionSummarizerTokens,
		AgentCrashes, AgentPodsStarted, AgentsFailed, CrashToStart, WakeLatency, SessionAPIRequests, SessionAPIDuration, SessionAPIWholeHistoryAnswers,
		EventsWaiting, DecodeBudget, &ConversationCollector{Reader: reader})
}

// EventsWaiting is how many Events wait for their turn to be sent (internal/eventsink): a
// backlog that stays up says Events trail the status by more than a moment.
var EventsWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "parley_events_waiting",
	Help: "Kubernetes Events waiting for their turn to be sent to the API server.",
})

// HistoriesCreated counts histories created and initialised, by backend (configmap, s3).
var HistoriesCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_histories_created_total",
	Help: "Conversation histories created and initialised (system prompt, seed or fork), by backend.",
}, []string{"backend"})

// StoreErrors counts failures to open, initialise or read a history, by backend and reason
// (the HistoryAvailable condition reason).
var StoreErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_history_store_errors_total",
	Help: "Failures to reach, initialise or read a conversation history, by backend and reason.",
}, []string{"backend", "reason"})

// CheckpointsCreated counts Checkpoints the controller created, by reason (Scheduled, Crash,
// Compaction, Archive; a Manual one is a user's and a Reset one the Session API's).
var CheckpointsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_checkpoints_created_total",
	Help: "Checkpoints created by the controller, by reason.",
}, []string{"reason"})

// Snapshots counts snapshot writes by checkpoint reason and result (written, failed).
var Snapshots = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_checkpoint_snapshots_total",
	Help: "Checkpoint snapshots written or failed, by checkpoint reason and result.",
}, []string{"reason", "result"})

// SnapshotBytes is the size of written snapshots.
var SnapshotBytes = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "parley_checkpoint_snapshot_bytes",
	Help:    "Size of written checkpoint snapshots in bytes.",
	Buckets: prometheus.ExponentialBuckets(1024, 4, 10),
})

// ExpiryLateness is how long after its expiresAt a session was marked Expired.
var ExpiryLateness = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "parley_expiry_lateness_seconds",
	Help:    "Delay between a session's expiresAt and the reconcile that expired it.",
	Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
})

// ObserveExpiryLateness records one expiry's lateness (never negative).
func ObserveExpiryLateness(d time.Duration) {
	ExpiryLateness.Observe(max(d, 0).Seconds())
}
