package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-dev/parley/pkg/history"
)

// ReasonDecodeBusy labels parley_history_store_errors_total for the controller's reads put off
// because the decode budget was taken (no HistoryAvailable reason: the history is not at fault).
const ReasonDecodeBusy = "DecodeBusy"

// ReasonNamespaceBusy labels parley_history_store_errors_total for the controller's reads put
// off because the Conversation's namespace had all of its slots for history I/O
// (--max-history-io-per-namespace). No namespace label: one series per namespace would grow
// with the tenants.
const ReasonNamespaceBusy = "NamespaceBusy"

var (
	decodeBudgetDesc = prometheus.NewDesc("parley_history_decode_budget_bytes",
		"The memory decodes of stored history may take at once on this replica (--history-decode-budget).", nil, nil)
	decodeInUseDesc = prometheus.NewDesc("parley_history_decode_bytes_in_use",
		"Of the decode budget, the bytes held by reads decoding stored history now.", nil, nil)
	decodeWaitsDesc = prometheus.NewDesc("parley_history_decode_waits_total",
		"Reads of stored history that waited for their part of the decode budget.", nil, nil)
	decodeRefusalsDesc = prometheus.NewDesc("parley_history_decode_refusals_total",
		"Reads of stored history that could not have their part of the decode budget in time (503 at the Session API, read again later by the controller).", nil, nil)
)

// DecodeBudget reports the history decode budget the manager shares between its stores, read at
// scrape time. It reports zeros until the budget is set.
var DecodeBudget = &DecodeBudgetCollector{}

// DecodeBudgetCollector reads a history.DecodeBudget's size, use and counters when scraped.
type DecodeBudgetCollector struct {
	budget atomic.Pointer[history.DecodeBudget]
}

// Set makes the collector report b.
func (c *DecodeBudgetCollector) Set(b *history.DecodeBudget) { c.budget.Store(b) }

// Describe implements prometheus.Collector.
func (c *DecodeBudgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- decodeBudgetDesc
	ch <- decodeInUseDesc
	ch <- decodeWaitsDesc
	ch <- decodeRefusalsDesc
}

// Collect implements prometheus.Collector.
func (c *DecodeBudgetCollector) Collect(ch chan<- prometheus.Metric) {
	var st history.DecodeBudgetStats
	if b := c.budget.Load(); b != nil {
		st = b.Stats()
	}
	ch <- prometheus.MustNewConstMetric(decodeBudgetDesc, prometheus.GaugeValue, float64(st.Size))
	ch <- prometheus.MustNewConstMetric(decodeInUseDesc, prometheus.GaugeValue, float64(st.InUse))
	ch <- prometheus.MustNewConstMetric(decodeWaitsDesc, prometheus.CounterValue, float64(st.Waits))
	ch <- prometheus.MustNewConstMetric(decodeRefusalsDesc, prometheus.CounterValue, float64(st.Refusals))
}
