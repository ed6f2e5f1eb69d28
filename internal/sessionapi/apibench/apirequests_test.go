package apibench

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-dev/parley/test/support/loadphase"
	"github.com/parley-dev/parley/test/support/metricstext"
)

// apiServerMetrics scrapes the API server's /metrics around each phase, so the benchmark
// says which requests a mode set off per operation (status writes, reviews, events): the
// API server's CPU per append is only as explainable as the requests behind it.
type apiServerMetrics struct {
	hc  *http.Client
	url string
	// before and after hold every phase's scrapes of a mode, concatenated: APIRequests sums
	// samples by key, so the concatenation gives the sum of the phases' differences.
	before, after map[string]metricstext.Set
}

func newAPIServerMetrics(hc *http.Client, host string) *apiServerMetrics {
	return &apiServerMetrics{
		hc: hc, url: strings.TrimSuffix(host, "/") + "/metrics",
		before: map[string]metricstext.Set{}, after: map[string]metricstext.Set{},
	}
}

// around scrapes before and after phase, and files both under mode.
func (m *apiServerMetrics) around(tb testing.TB, mode string, phase func()) {
	tb.Helper()
	before := m.scrape(tb)
	phase()
	m.before[mode] = append(m.before[mode], before...)
	m.after[mode] = append(m.after[mode], m.scrape(tb)...)
}

func (m *apiServerMetrics) scrape(tb testing.TB) metricstext.Set {
	tb.Helper()
	s, err := metricstext.Scrape(context.Background(), m.hc, m.url)
	if err != nil {
		tb.Fatalf("scraping the API server's metrics: %v", err)
	}
	return s
}

// log logs the requests each mode's phases made, per operation, the largest first.
func (m *apiServerMetrics) log(tb testing.TB, results map[string]*loadphase.Result) {
	tb.Helper()
	for _, mode := range []string{"raw", "store", "api"} {
		lines := metricstext.APIRequests(m.before[mode], m.after[mode], float64(results[mode].Ops), "op")
		if len(lines) == 0 {
			lines = []string{"none"}
		}
		tb.Logf("API server requests, %s phases:\n      %s", mode, strings.Join(lines[:min(10, len(lines))], "\n      "))
	}
}
