package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is d as a person says it, in its two largest units: 45s, 3m12s, 2h5m, 3d4h.
// Below a second it is "0s".
func Duration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	d = d.Truncate(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	s := d / time.Second
	units := []struct {
		n    time.Duration
		unit string
	}{{days, "d"}, {h, "h"}, {m, "m"}, {s, "s"}}
	for i, u := range units {
		if u.n == 0 {
			continue
		}
		out := fmt.Sprintf("%d%s", u.n, u.unit)
		if i+1 < len(units) && units[i+1].n != 0 {
			out += fmt.Sprintf("%d%s", units[i+1].n, units[i+1].unit)
		}
		return out
	}
	return "0s"
}

// Relative is t seen from now: "in 3h12m", "5m ago", "now".
func Relative(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d > -time.Second && d < time.Second:
		return "now"
	case d > 0:
		return "in " + Duration(d)
	default:
		return Duration(d) + " ago"
	}
}

// When is t both ways: "in 3h12m (2026-11-23 18:00:00 UTC)".
func When(t, now time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return Relative(t, now) + " (" + t.In(loc).Format("2006-01-02 15:04:05 MST") + ")"
}

// ContextBar shows how full the context window is:
// "[██████░░░░░░░░░░░░░░]  31%  31,000 / 100,000 tokens". Without a limit there is no bar.
func ContextBar(tokens, limit int64, width int) string {
	if limit <= 0 {
		return Count(tokens) + " tokens (no maxTokens set)"
	}
	if width <= 0 {
		width = 20
	}
	percent := tokens * 100 / limit
	filled := int(min(tokens*int64(width)/limit, int64(width)))
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	return fmt.Sprintf("[%s] %3d%%  %s / %s tokens", bar, percent, Count(tokens), Count(limit))
}

// Count writes n with thousands separators: 1234567 → "1,234,567".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Count(int64(n)) + " " + noun + "s"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
