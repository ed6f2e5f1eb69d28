package render

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	cases := map[time.Duration]string{
		0:                                 "0s",
		400 * time.Millisecond:            "0s",
		45 * time.Second:                  "45s",
		60 * time.Second:                  "1m",
		3*time.Minute + 12*time.Second:    "3m12s",
		2*time.Hour + 5*time.Minute:       "2h5m",
		2*time.Hour + 5*time.Second:       "2h",
		24 * time.Hour:                    "1d",
		76*time.Hour + 59*time.Minute:     "3d4h",
		-90 * time.Second:                 "1m30s",
		26*time.Hour + 30*time.Second + 1: "1d2h",
	}
	for d, want := range cases {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestRelativeAndWhen(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		t        time.Time
		relative string
		when     string
	}{
		{now.Add(3*time.Hour + 12*time.Minute), "in 3h12m", "in 3h12m (2026-11-23 15:12:00 UTC)"},
		{now.Add(-5 * time.Minute), "5m ago", "5m ago (2026-11-23 11:55:00 UTC)"},
		{now.Add(300 * time.Millisecond), "now", "now (2026-11-23 12:00:00 UTC)"},
		{now.Add(-48 * time.Hour), "2d ago", "2d ago (2026-11-21 12:00:00 UTC)"},
	}
	for _, c := range cases {
		if got := Relative(c.t, now); got != c.relative {
			t.Errorf("Relative(%v) = %q, want %q", c.t, got, c.relative)
		}
		if got := When(c.t, now, nil); got != c.when {
			t.Errorf("When(%v) = %q, want %q", c.t, got, c.when)
		}
	}
	berlin := time.FixedZone("CET", 3600)
	if got := When(now.Add(time.Hour), now, berlin); got != "in 1h (2026-11-23 14:00:00 CET)" {
		t.Errorf("When in another zone = %q", got)
	}
}

func TestContextBar(t *testing.T) {
	cases := []struct {
		tokens, limit int64
		width         int
		want          string
	}{
		{0, 100000, 10, "[░░░░░░░░░░]   0%  0 / 100,000 tokens"},
		{31000, 100000, 10, "[███░░░░░░░]  31%  31,000 / 100,000 tokens"},
		{99999, 100000, 10, "[█████████░]  99%  99,999 / 100,000 tokens"},
		{100000, 100000, 10, "[██████████] 100%  100,000 / 100,000 tokens"},
		{250000, 100000, 10, "[██████████] 250%  250,000 / 100,000 tokens"},
		{5, 8, 4, "[██░░]  62%  5 / 8 tokens"},
		{1234, 0, 10, "1,234 tokens (no maxTokens set)"},
		{31000, 100000, 0, "[██████░░░░░░░░░░░░░░]  31%  31,000 / 100,000 tokens"},
	}
	for _, c := range cases {
		if got := ContextBar(c.tokens, c.limit, c.width); got != c.want {
			t.Errorf("ContextBar(%d, %d, %d) = %q, want %q", c.tokens, c.limit, c.width, got, c.want)
		}
	}
}

func TestCount(t *testing.T) {
	cases := map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500", 100000: "100,000"}
	for n, want := range cases {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFold(t *testing.T) {
	cases := []struct {
		label, text string
		width       int
		want        string
	}{
		{"▸ Bash", "", 40, "▸ Bash"},
		{"▸ Bash", `{"command":"ls"}`, 40, `▸ Bash {"command":"ls"}`},
		{"◂ result", "abcdefghijklmnopqrstuvwxyz0123456789", 30, "◂ result abcdefghi… (36 chars)"},
		{"◂ result", "ééééééééééééééééééééééééééé", 30, "◂ result ééééééééé… (27 chars)"},
		{"a-very-long-label-that-fills-it", "text", 10, "a-very-long-label-that-fills-it …" + " (4 chars)"},
	}
	for _, c := range cases {
		if got := fold(c.label, c.text, c.width); got != c.want {
			t.Errorf("fold(%q, %q, %d) = %q, want %q", c.label, c.text, c.width, got, c.want)
		}
	}
	if got := oneLine("  a\nb\r\n  c   d \n"); got != "a ⏎ b ⏎ c d" {
		t.Errorf("oneLine = %q", got)
	}
}
