package compact

import "testing"

func TestDue(t *testing.T) {
	cases := []struct {
		tokens, maxTokens, percent int
		want                       bool
	}{
		{799, 1000, 80, false},
		{800, 1000, 80, true},
		{1200, 1000, 80, true},
		{0, 0, 80, false},                        // no window known
		{500, -1, 80, false},                     // no window known
		{800, 1000, 0, true},                     // default 80 %
		{799, 1000, 0, false},                    // default 80 %
		{999, 1000, 100, false},                  // compact only when full
		{1000, 1000, 100, true},                  //
		{800, 1000, 150, true},                   // out of range: default 80 %
		{2_000_000_000, 2_100_000_000, 90, true}, // no overflow
	}
	for _, tc := range cases {
		if got := Due(tc.tokens, tc.maxTokens, tc.percent); got != tc.want {
			t.Errorf("Due(%d, %d, %d) = %v, want %v", tc.tokens, tc.maxTokens, tc.percent, got, tc.want)
		}
	}
}

func TestTargetBudget(t *testing.T) {
	cases := []struct{ maxTokens, percent, want int }{
		{200_000, 80, 80_000},
		{1000, 0, 400},
		{1000, 100, 500},
		{0, 80, 0},
	}
	for _, tc := range cases {
		if got := TargetBudget(tc.maxTokens, tc.percent); got != tc.want {
			t.Errorf("TargetBudget(%d, %d) = %d, want %d", tc.maxTokens, tc.percent, got, tc.want)
		}
		if tc.maxTokens > 0 && Due(TargetBudget(tc.maxTokens, tc.percent), tc.maxTokens, tc.percent) {
			t.Errorf("a state at the target budget is already due for compaction")
		}
	}
}
