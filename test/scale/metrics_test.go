package scale

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metricSet is one scrape.
type metricSet []sample

func scrape(ctx context.Context, c *http.Client, url string) (metricSet, error) {
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
	return parseMetrics(string(raw))
}

// parseMetrics reads the Prometheus text exposition format (no timestamps needed here).
func parseMetrics(text string) (metricSet, error) {
	var out metricSet
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{labels: map[string]string{}}
		var rest string
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.name = line[:i]
			var err error
			rest, err = parseLabels(line[i+1:], s.labels)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
		} else {
			s.name, rest, _ = strings.Cut(line, " ")
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("%q: no value", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		s.value = v
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

// sum adds the samples named name whose labels include every pair of match.
func (ms metricSet) sum(name string, match ...string) float64 {
	var t float64
	for _, s := range ms {
		if s.name == name && s.matches(match) {
			t += s.value
		}
	}
	return t
}

func (s sample) matches(match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		if s.labels[match[i]] != match[i+1] {
			return false
		}
	}
	return true
}

// bucket is one cumulative histogram bucket.
type bucket struct {
	le    float64
	count float64
}

// histogram returns the cumulative buckets of a histogram, sorted by bound.
func (ms metricSet) histogram(name string, match ...string) []bucket {
	byLE := map[float64]float64{}
	for _, s := range ms {
		if s.name != name+"_bucket" || !s.matches(match) {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			continue
		}
		byLE[le] += s.value
	}
	out := make([]bucket, 0, len(byLE))
	for le, c := range byLE {
		out = append(out, bucket{le, c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].le < out[j].le })
	return out
}

// quantile returns the bound of the first bucket holding the q-quantile, and Prometheus'
// histogram_quantile estimate (linear within that bucket).
func quantile(bs []bucket, q float64) (bound, estimate float64) {
	if len(bs) == 0 || bs[len(bs)-1].count == 0 {
		return math.NaN(), math.NaN()
	}
	total := bs[len(bs)-1].count
	rank := q * total
	prevLE, prevCount := 0.0, 0.0
	for _, b := range bs {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return b.le, prevLE
			}
			if b.count == prevCount {
				return b.le, b.le
			}
			return b.le, prevLE + (b.le-prevLE)*(rank-prevCount)/(b.count-prevCount)
		}
		prevLE, prevCount = b.le, b.count
	}
	return math.Inf(1), math.NaN()
}

// delta returns the difference of two scrapes' sums.
func delta(before, after metricSet, name string, match ...string) float64 {
	return after.sum(name, match...) - before.sum(name, match...)
}

// apiRequests lists the API server's requests between two scrapes by verb, resource,
// subresource and code, largest first, with the count per Conversation (of convs) and the mean
// server-side latency of that verb and resource (apiserver_request_duration_seconds, which
// does not split by code).
func apiRequests(before, after metricSet, convs int) []string {
	type key struct{ verb, resource, sub, code string }
	counts := map[key]float64{}
	type lkey struct{ verb, resource, sub string }
	secs, n := map[lkey]float64{}, map[lkey]float64{}
	for _, ms := range []struct {
		set  metricSet
		sign float64
	}{{before, -1}, {after, 1}} {
		for _, s := range ms.set {
			l := lkey{s.labels["verb"], s.labels["resource"], s.labels["subresource"]}
			switch s.name {
			case "apiserver_request_total":
				counts[key{l.verb, l.resource, l.sub, s.labels["code"]}] += ms.sign * s.value
			case "apiserver_request_duration_seconds_sum":
				secs[l] += ms.sign * s.value
			case "apiserver_request_duration_seconds_count":
				n[l] += ms.sign * s.value
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
		line := fmt.Sprintf("%-6s %-22s %s %7.0f (%5.2f per Conversation)", k.verb, res, k.code, counts[k], counts[k]/float64(convs))
		if l := (lkey{k.verb, k.resource, k.sub}); n[l] >= 1 && k.verb != "WATCH" {
			line += fmt.Sprintf("  mean %.1f ms", 1000*secs[l]/n[l])
		}
		out = append(out, line)
	}
	return out
}

func TestParseMetrics(t *testing.T) {
	ms, err := parseMetrics(`# HELP x y
controller_runtime_reconcile_total{controller="conversation",result="success"} 12
controller_runtime_reconcile_total{controller="conversation",result="error"} 3
controller_runtime_reconcile_total{controller="checkpoint",result="success"} 5
odd{msg="a \"quoted\", comma"} 1.5e+00
parley_expiry_lateness_seconds_bucket{le="0.01"} 10
parley_expiry_lateness_seconds_bucket{le="0.05"} 90
parley_expiry_lateness_seconds_bucket{le="0.1"} 100
parley_expiry_lateness_seconds_bucket{le="+Inf"} 100
plain 7
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := ms.sum("controller_runtime_reconcile_total", "controller", "conversation"); got != 15 {
		t.Errorf("sum = %v, want 15", got)
	}
	if got := ms.sum("odd", "msg", `a "quoted", comma`); got != 1.5 {
		t.Errorf("escaped label: %v", got)
	}
	if got := ms.sum("plain"); got != 7 {
		t.Errorf("plain = %v", got)
	}
	bs := ms.histogram("parley_expiry_lateness_seconds")
	if b, e := quantile(bs, 0.5); b != 0.05 || math.Abs(e-0.03) > 1e-9 {
		t.Errorf("p50 = %v, %v; want 0.05, 0.03", b, e)
	}
	if b, _ := quantile(bs, 0.99); b != 0.1 {
		t.Errorf("p99 bound = %v, want 0.1", b)
	}
}
