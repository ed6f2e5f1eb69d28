package compaction

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/compact"
)

func TestMeteredCountsWhatTheProviderReported(t *testing.T) {
	tokens := func(kind string) float64 {
		return testutil.ToFloat64(metrics.CompactionSummarizerTokens.WithLabelValues("test-provider", kind))
	}
	kinds := []string{"input", "output", "cache_read", "cache_write"}
	before := map[string]float64{}
	for _, k := range kinds {
		before[k] = tokens(k)
	}
	answers := []struct {
		summary compact.Summary
		err     error
	}{
		{compact.Summary{Text: "a", Usage: conversation.Usage{Input: 100, Output: 8, CacheRead: 3}}, nil},
		{compact.Summary{Text: "b", Usage: conversation.Usage{Input: 50, Output: 2, CacheWrite: 7}}, nil},
		{compact.Summary{}, errors.New("failed")},
		{compact.Summary{Text: "c"}, nil}, // no usage reported
	}
	i := 0
	s := metered("test-provider", compact.SummarizerFunc(func(context.Context, compact.SummaryRequest) (compact.Summary, error) {
		a := answers[i]
		i++
		return a.summary, a.err
	}))
	for range answers {
		_, _ = s.Summarize(t.Context(), compact.SummaryRequest{})
	}
	want := map[string]float64{"input": 150, "output": 10, "cache_read": 3, "cache_write": 7}
	for _, k := range kinds {
		if got := tokens(k) - before[k]; got != want[k] {
			t.Errorf("%s: %v tokens counted, want %v", k, got, want[k])
		}
	}
}

func TestMeteredPassesTheAnswerThrough(t *testing.T) {
	boom := errors.New("boom")
	s := metered("test-provider", compact.SummarizerFunc(func(context.Context, compact.SummaryRequest) (compact.Summary, error) {
		return compact.Summary{Text: "partial"}, boom
	}))
	got, err := s.Summarize(t.Context(), compact.SummaryRequest{})
	if !errors.Is(err, boom) || got.Text != "partial" {
		t.Errorf("got %+v, %v", got, err)
	}
}
