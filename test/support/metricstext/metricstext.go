// Package metricstext reads the Prometheus text format the benchmarks scrape from the manager
// and the API server, and sums what changed between two scrapes.
package metricstext

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Sample is one line of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Set is one scrape.
type Set []Sample

// Scrape fetches url with c and parses the answer.
func Scrape(ctx context.Context, c *http.Client, url string) (Set, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return Parse(string(raw))
}

// Parse reads the Prometheus text exposition format (no timestamps needed here).
func Parse(text string) (Set, error) {
	var out Set
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		s := Sample{Labels: map[string]string{}}
		var rest string
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.Name = line[:i]
			var err error
			rest, err = parseLabels(line[i+1:], s.Labels)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
		} else {
			s.Name, rest, _ = strings.Cut(line, " ")
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("%q: no value", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		s.Value = v
		out = append(out, s)
	}
	return out, nil
}

// parseLabels reads `a="x",b="y"}` into m and returns what follows the closing brace.
func parseLabels(s string, m map[string]string) (string, error) {
	for {
		s = strings.TrimLeft(s, ", ")
		if strings.HasPrefix(s, "}") {
			return s[1:], nil
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok || !strings.HasPrefix(v, `"`) {
			return "", fmt.Errorf("bad label list")
		}
		var b strings.Builder
		i := 1
		for ; i < len(v) && v[i] != '"'; i++ {
			if v[i] == '\\' && i+1 < len(v) {
				i++
				switch v[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(v[i])
				}
				continue
			}
			b.WriteByte(v[i])
		}
		if i >= len(v) {
			return "", fmt.Errorf("unterminated label value")
		}
		m[strings.TrimSpace(k)] = b.String()
		s = v[i+1:]
	}
}

// Sum adds the samples named name whose labels include every pair of match.
func (ms Set) Sum(name string, match ...string) float64 {
	var t float64
	for _, s := range ms {
		if s.Name == name && s.matches(match) {
			t += s.Value
		}
	}
	return t
}

func (s Sample) matches(match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		if s.Labels[match[i]] != match[i+1] {
			return false
		}
	}
	return true
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	LE    float64
	Count float64
}

// Histogram returns the cumulative buckets of a histogram, sorted by bound.
func (ms Set) Histogram(name string, match ...string) []Bucket {
	byLE := map[float64]float64{}
	for _, s := range ms {
		if s.Name != name+"_bucket" || !s.matches(match) {
			continue
		}
		le, err := strconv.ParseFloat(s.Labels["le"], 64)
		if err != nil {
			continue
		}
		byLE[le] += s.Value
	}
	out := make([]Bucket, 0, len(byLE))
	for le, c := range byLE {
		out = append(out, Bucket{le, c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LE < out[j].LE })
	return out
}

// Quantile returns the bound of the first Bucket holding the q-quantile, and Prometheus'
// histogram_quantile estimate (linear within that Bucket).
func Quantile(bs []Bucket, q float64) (bound, estimate float64) {
	if len(bs) == 0 || bs[len(bs)-1].Count == 0 {
		return math.NaN(), math.NaN()
	}
	total := bs[len(bs)-1].Count
	rank := q * total
	prevLE, prevCount := 0.0, 0.0
	for _, b := range bs {
		if b.Count >= rank {
			if math.IsInf(b.LE, 1) {
				return b.LE, prevLE
			}
			if b.Count == prevCount {
				return b.LE, b.LE
			}
			return b.LE, prevLE + (b.LE-prevLE)*(rank-prevCount)/(b.Count-prevCount)
		}
		prevLE, prevCount = b.LE, b.Count
	}
	return math.Inf(1), math.NaN()
}

// Delta returns the difference of two scrapes' sums.
func Delta(before, after Set, name string, match ...string) float64 {
	return after.Sum(name, match...) - before.Sum(name, match...)
}

// APIRequests lists the API server's requests between two scrapes by verb, resource,
// subresource and code, largest first, with the count per unit (n of them) and the mean
// server-side latency of that verb and resource (apiserver_request_duration_seconds, which
// does not split by code).
func APIRequests(before, after Set, n float64, unit string) []string {
	type key struct{ verb, resource, sub, code string }
	counts := map[key]float64{}
	type lkey struct{ verb, resource, sub string }
	secs, calls := map[lkey]float64{}, map[lkey]float64{}
	for _, ms := range []struct {
		set  Set
		sign float64
	}{{before, -1}, {after, 1}} {
		for _, s := range ms.set {
			l := lkey{s.Labels["verb"], s.Labels["resource"], s.Labels["subresource"]}
			switch s.Name {
			case "apiserver_request_total":
				counts[key{l.verb, l.resource, l.sub, s.Labels["code"]}] += ms.sign * s.Value
			case "apiserver_request_duration_seconds_sum":
				secs[l] += ms.sign * s.Value
			case "apiserver_request_duration_seconds_count":
				calls[l] += ms.sign * s.Value
			}
		}
	}
	keys := make([]key, 0, len(counts))
	for k, v := range counts {
		if v >= 1 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		res := k.resource
		if k.sub != "" {
			res += "/" + k.sub
		}
		line := fmt.Sprintf("%-6s %-22s %s %7.0f (%.3f per %s)", k.verb, res, k.code, counts[k], counts[k]/n, unit)
		if l := (lkey{k.verb, k.resource, k.sub}); calls[l] >= 1 && k.verb != "WATCH" {
			line += fmt.Sprintf("  mean %.1f ms", 1000*secs[l]/calls[l])
		}
		out = append(out, line)
	}
	return out
}
