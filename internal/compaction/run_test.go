package compaction

import (
	"testing"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation/compact"
)

// TestStrategyReadsTheSpecThroughItsDefault: every strategy of the API maps to the library's,
// and an unset one is the API's default.
func TestStrategyReadsTheSpecThroughItsDefault(t *testing.T) {
	for in, want := range map[parleyv1alpha1.CompactionStrategy]compact.Strategy{
		parleyv1alpha1.CompactionSlidingWindow:    compact.StrategySlidingWindow,
		parleyv1alpha1.CompactionClearToolResults: compact.StrategyClearToolResults,
		parleyv1alpha1.CompactionSummarize:        compact.StrategySummarize,
		parleyv1alpha1.CompactionNone:             compact.StrategyNone,
	} {
		if got := Strategy(&parleyv1alpha1.ContextSpec{Strategy: in}); got != want {
			t.Errorf("strategy %q: %q, want %q", in, got, want)
		}
	}
	unset, def := Strategy(&parleyv1alpha1.ContextSpec{}), Strategy(&parleyv1alpha1.ContextSpec{Strategy: parleyv1alpha1.DefaultStrategy})
	if unset != def {
		t.Errorf("an unset strategy is %q, want the default's %q", unset, def)
	}
}
