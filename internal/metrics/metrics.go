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

// ConversationCollector counts Conversations by phase when scraped, from the informer cache, so
// the gauge is never stale and costs nothing between scrapes.
type ConversationCollector struct {
	Reader client.Reader
	// Timeout bounds one scrape's list.
	Timeout time.Duration
}

// Describe implements prometheus.Collector.
func (c *ConversationCollector) Describe(ch chan<- *prometheus.Desc) { ch <- conversationsDesc }

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
		return
	}
	counts := map[parleyv1alpha1.ConversationPhase]int{}
	for i := range list.Items {
		p := list.Items[i].Status.Phase
		if p == "" {
			p = parleyv1alpha1.ConversationPending
		}
		counts[p]++
	}
	for _, p := range phases {
		ch <- prometheus.MustNewConstMetric(conversationsDesc, prometheus.GaugeValue, float64(counts[p]), string(p))
	}
}

// Register adds Parley's metrics to controller-runtime's registry, served on /metrics.
func Register(reader client.Reader) {
	ctrlmetrics.Registry.MustRegister(Expirations, &ConversationCollector{Reader: reader})
}
