package main

import (
	"slices"
	"testing"
)

// --watch-namespaces: an empty list (no namespace named) watches all namespaces, so blanks and
// stray commas must not become a namespace "" that restricts the cache to nothing.
func TestSplitNamespaces(t *testing.T) {
	tests := map[string]struct {
		flag string
		want []string
	}{
		"unset watches all":          {"", nil},
		"only separators and blanks": {" , ,, ", nil},
		"one":                        {"team-a", []string{"team-a"}},
		"several, spaces trimmed":    {" team-a , team-b,team-c ", []string{"team-a", "team-b", "team-c"}},
		"empty items skipped":        {"team-a,,team-b,", []string{"team-a", "team-b"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := splitNamespaces(tt.flag); !slices.Equal(got, tt.want) {
				t.Fatalf("splitNamespaces(%q) = %q, want %q", tt.flag, got, tt.want)
			}
		})
	}
}
