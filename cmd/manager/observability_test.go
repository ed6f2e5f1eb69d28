package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/test/support/repopath"
)

// The alerting rules (config/prometheus/rules.yaml) and the Grafana dashboard
// (config/grafana/parley-dashboard.json) against the metrics this binary registers: every
// expression parses as PromQL, every metric it names exists, and every Parley metric is on the
// dashboard. A renamed metric, a typo in an alert or a new metric nobody charts fails here, not
// in someone's Prometheus.

// registerOnce: Register panics when a metric is registered twice, as in the manager.
var registerOnce sync.Once

// registeredNames are the metric names on controller-runtime's registry, which the manager
// serves: controller-runtime's own (reconciles, work queues, API clients, leader election, Go
// and process), registered when this binary's packages load, and Parley's, which run registers.
func registeredNames(t *testing.T) map[string]bool {
	t.Helper()
	registerOnce.Do(func() { metrics.Register(fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build()) })
	reg, ok := ctrlmetrics.Registry.(prometheus.Collector)
	if !ok {
		t.Fatalf("controller-runtime's registry (%T) cannot describe its metrics", ctrlmetrics.Registry)
	}
	descs := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(descs)
		close(descs)
	}()
	fqName := regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range descs {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name of %s", d)
		}
		names[m[1]] = true
	}
	return names
}

// exists says whether a series name is served: a registered name, or a histogram's or
// summary's _bucket, _sum or _count series.
func exists(names map[string]bool, series string) bool {
	if names[series] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(series, suffix); ok && names[base] {
			return true
		}
	}
	return false
}

// grafanaVariable matches Grafana's variables ($job, ${job}, $__rate_interval), which are not
// PromQL: a range variable becomes a duration, any other a plain word.
var grafanaVariable = regexp.MustCompile(`\$\{?(__[a-z_]+|[A-Za-z0-9_]+)\}?`)

func promQL(expr string) string {
	return grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		if strings.Contains(v, "__") {
			return "5m"
		}
		return "x"
	})
}

// seriesIn parses expr and returns the metric names it selects.
func seriesIn(t *testing.T, where, expr string) []string {
	t.Helper()
	e, err := parser.ParseExpr(promQL(expr))
	if err != nil {
		t.Errorf("%s: %q is not PromQL: %v", where, expr, err)
		return nil
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if v, ok := n.(*parser.VectorSelector); ok {
			name := v.Name
			for _, m := range v.LabelMatchers {
				if m.Name == "__name__" {
					name = m.Value
				}
			}
			if name == "" {
				t.Errorf("%s: %q selects series without naming a metric", where, expr)
			}
			out = append(out, name)
		}
		return nil
	})
	if len(out) == 0 {
		t.Errorf("%s: %q names no metric", where, expr)
	}
	return out
}

func readRepoFile(t *testing.T, path string) []byte {
	t.Helper()
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// alertExprs reads the PrometheusRule's expressions by rule name. Its groups go through
// Prometheus's own rule-file parser (what promtool check rules runs), strictly: a misspelt key,
// a bad duration or an annotation template that does not compile fails here, not in the
// operator's reload.
func alertExprs(t *testing.T) map[string]string {
	t.Helper()
	var rule struct {
		Kind string `json:"kind"`
		Spec any    `json:"spec"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "config/prometheus/rules.yaml"), &rule); err != nil {
		t.Fatalf("config/prometheus/rules.yaml: %v", err)
	}
	if rule.Kind != "PrometheusRule" {
		t.Fatalf("config/prometheus/rules.yaml is a %q", rule.Kind)
	}
	spec, err := yaml.Marshal(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation)
	for _, err := range errs {
		t.Errorf("config/prometheus/rules.yaml: %v", err)
	}
	if groups == nil {
		t.FailNow()
	}
	out := map[string]string{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			out[r.Alert+r.Record] = r.Expr
		}
	}
	return out
}

// panel is what the test reads of a Grafana panel; rows may nest panels.
type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// dashboardExprs reads every query of the dashboard (panel targets and template variables) by
// where it is.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(readRepoFile(t, "config/grafana/parley-dashboard.json"), &d); err != nil {
		t.Fatalf("config/grafana/parley-dashboard.json: %v", err)
	}
	out := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for i, tg := range p.Targets {
				if tg.Expr == "" {
					t.Errorf("panel %q has a target without a query", p.Title)
				}
				out["panel "+p.Title+" #"+string(rune('A'+i))] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	// label_values(METRIC, label) is Grafana's, not PromQL: its first argument is a selector.
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*[A-Za-z_]+\)$`)
	for _, v := range d.Templating.List {
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		if s == "" {
			continue
		}
		m := labelValues.FindStringSubmatch(s)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(METRIC, label)", v.Name, s)
			continue
		}
		out["variable "+v.Name] = m[1]
	}
	return out
}

func TestAlertsAndDashboardUseRegisteredMetrics(t *testing.T) {
	names := registeredNames(t)
	for _, want := range []string{"parley_conversations", "controller_runtime_reconcile_total", "workqueue_depth"} {
		if !names[want] {
			t.Fatalf("%s is not registered: the registry read is wrong (%d names)", want, len(names))
		}
	}
	for file, exprs := range map[string]map[string]string{
		"config/prometheus/rules.yaml":         alertExprs(t),
		"config/grafana/parley-dashboard.json": dashboardExprs(t),
	} {
		if len(exprs) < 8 {
			t.Errorf("%s has %d expressions: not the file the test expects", file, len(exprs))
		}
		used := map[string]bool{}
		for where, expr := range exprs {
			for _, series := range seriesIn(t, file+": "+where, expr) {
				used[series] = true
				if !exists(names, series) {
					t.Errorf("%s: %s uses %s, which the manager does not register", file, where, series)
				}
			}
		}
		t.Logf("%s: %d expressions naming %d metrics", file, len(exprs), len(used))
	}
}

// TestDashboardChartsEveryParleyMetric: a new parley_ metric needs a panel.
func TestDashboardChartsEveryParleyMetric(t *testing.T) {
	names := registeredNames(t)
	charted := map[string]bool{}
	for where, expr := range dashboardExprs(t) {
		for _, series := range seriesIn(t, where, expr) {
			charted[series] = true
		}
	}
	var missing []string
	for name := range names {
		if !strings.HasPrefix(name, "parley_") {
			continue
		}
		found := charted[name]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			found = found || charted[name+suffix]
		}
		if !found {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("config/grafana/parley-dashboard.json has no panel for %v: add one (and a row in docs/operations.md)", missing)
	}
}
