package main

import (
	"flag"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/parley-dev/parley/test/support/doctable"
)

// The docs' tables against the manager: the metrics docs/operations.md lists against those it
// registers, the defaults the flags table, the chart's values.yaml comments and install.md's
// values table state against the flags' own, and install.md's values against values.yaml.

func managerFlags() map[string]*flag.Flag {
	var o options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	bindFlags(fs, &o)
	out := map[string]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { out[f.Name] = f })
	return out
}

// sameDefault compares a documented default with a flag's: durations and numbers by value.
func sameDefault(doc, def string) bool {
	if doc == def {
		return true
	}
	if a, err := time.ParseDuration(doc); err == nil {
		b, err := time.ParseDuration(def)
		return err == nil && a == b
	}
	if a, err := strconv.ParseFloat(doc, 64); err == nil {
		b, err := strconv.ParseFloat(def, 64)
		return err == nil && a == b
	}
	return false
}

// TestMetricsTableMatchesRegistered: every parley_ metric the manager registers is a row of
// docs/operations.md's metrics table, and every parley_ row is registered.
func TestMetricsTableMatchesRegistered(t *testing.T) {
	table, err := doctable.Find("docs/operations.md", "metric")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, cell := range table.Column("metric") {
		for _, name := range doctable.Codes(cell) {
			if strings.HasPrefix(name, "parley_") {
				documented[name] = true
			}
		}
	}
	registered := registeredNames(t)
	for name := range registered {
		if strings.HasPrefix(name, "parley_") && !documented[name] {
			t.Errorf("%s is registered but not in docs/operations.md's metrics table", name)
		}
	}
	for name := range documented {
		if !registered[name] {
			t.Errorf("docs/operations.md's metrics table lists %s, which the manager does not register", name)
		}
	}
}

// TestFlagsTableDefaults: each default in docs/operations.md's flags table is the flag's. A
// cell that starts with code spans gives one default per flag of its row; a cell in words (a
// dash, "all", "the pod's namespace") stands for an empty default.
func TestFlagsTableDefaults(t *testing.T) {
	table, err := doctable.Find("docs/operations.md", "flag")
	if err != nil {
		t.Fatal(err)
	}
	flags := managerFlags()
	checked := 0
	for _, row := range table.Rows {
		codes := doctable.Codes(row[0])
		names := make([]string, 0, len(codes))
		for _, c := range codes {
			names = append(names, strings.TrimPrefix(c, "--"))
		}
		if strings.HasPrefix(row[0], "`--zap-") {
			continue // zap's own flags, bound in main
		}
		var defaults []string
		if strings.HasPrefix(row[1], "`") {
			defaults = doctable.Codes(row[1])
			if len(defaults) < len(names) {
				t.Errorf("%s: %d defaults for %d flags", row[0], len(defaults), len(names))
				continue
			}
		}
		for i, name := range names {
			f := flags[name]
			if f == nil {
				continue // TestFlagsTableMatchesFlags names it
			}
			checked++
			switch {
			case defaults == nil && f.DefValue != "":
				t.Errorf("--%s: docs/operations.md says %q, the default is %s", name, row[1], f.DefValue)
			case defaults != nil && !sameDefault(defaults[i], f.DefValue):
				t.Errorf("--%s: docs/operations.md says the default is %s, it is %s", name, defaults[i], f.DefValue)
			}
		}
	}
	if checked < len(flags)-2 {
		t.Errorf("checked %d of %d flags' defaults", checked, len(flags))
	}
}

// flagMention is a manager flag and a value as the chart's comments and install.md write
// them: "--kube-api-qps 500" (backquotes around the flag allowed).
var flagMention = regexp.MustCompile("`?--([a-z0-9-]+)`? ([0-9][^\\s,)]*)")

// TestChartDocsStateTheManagersDefaults: where dist/chart/values.yaml's comments or
// docs/install.md's values table give a manager flag's default, it is the flag's.
func TestChartDocsStateTheManagersDefaults(t *testing.T) {
	flags := managerFlags()
	values, err := doctable.Read("dist/chart/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var comments []string
	for _, l := range strings.Split(values, "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(l), "#"); ok {
			comments = append(comments, c)
		}
	}
	table, err := doctable.Find("docs/install.md", "value")
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]string, 0, len(table.Rows))
	for _, r := range table.Rows {
		rows = append(rows, strings.Join(r, " | "))
	}
	seen := 0
	for where, text := range map[string]string{
		"dist/chart/values.yaml": strings.Join(comments, " "), "docs/install.md's values table": strings.Join(rows, "\n"),
	} {
		for _, m := range flagMention.FindAllStringSubmatch(text, -1) {
			f := flags[m[1]]
			if f == nil {
				continue
			}
			seen++
			if !sameDefault(m[2], f.DefValue) {
				t.Errorf("%s says --%s %s; the manager's default is %s", where, m[1], m[2], f.DefValue)
			}
		}
	}
	if seen < 8 {
		t.Errorf("found %d flag defaults in the chart's comments and install.md; the client limits are gone?", seen)
	}
}

// TestInstallValuesTableMatchesValues: every value docs/install.md's table names is in
// dist/chart/values.yaml, and every value there is in the table (a.b.* covers a.b's keys).
// Where the default cell starts with code spans, one per value of the row, they are the
// values' defaults.
func TestInstallValuesTableMatchesValues(t *testing.T) {
	text, err := doctable.Read("dist/chart/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal([]byte(text), &values); err != nil {
		t.Fatal(err)
	}
	leaves := map[string]any{}
	flatten("", values, leaves)
	table, err := doctable.Find("docs/install.md", "value")
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, row := range table.Rows {
		codes := doctable.Codes(row[0])
		keys := make([]string, 0, len(codes))
		prev := ""
		for _, k := range codes {
			// `kubeAPI.qps`/`burst`: a bare key continues the previous one's parent.
			if !strings.Contains(k, ".") && prev != "" && strings.Contains(prev, ".") && leaves[k] == nil && !hasPrefix(leaves, k) {
				k = prev[:strings.LastIndex(prev, ".")+1] + k
			}
			prev = k
			keys = append(keys, k)
		}
		for _, k := range keys {
			prefix, wild := strings.CutSuffix(k, ".*")
			found := false
			for leaf := range leaves {
				if leaf == k || strings.HasPrefix(leaf, prefix+".") && (wild || leaves[k] == nil) {
					covered[leaf], found = true, true
				}
			}
			if !found {
				t.Errorf("docs/install.md's values table names %s, which dist/chart/values.yaml does not have", k)
			}
		}
		if !strings.HasPrefix(row[1], "`") {
			continue
		}
		defaults := doctable.Codes(row[1])
		for i, k := range keys {
			v, ok := leaves[k]
			if !ok || i >= len(defaults) || len(defaults) != len(keys) && len(defaults) != 1 {
				continue
			}
			d := defaults[i]
			if len(defaults) == 1 {
				d = defaults[0]
			}
			if got := strings.TrimSpace(mustYAML(t, v)); got != d && strings.Trim(got, `"`) != d {
				t.Errorf("docs/install.md: %s defaults to %s; dist/chart/values.yaml has %s", k, d, got)
			}
		}
	}
	var missing []string
	for leaf := range leaves {
		if !covered[leaf] {
			missing = append(missing, leaf)
		}
	}
	sort.Strings(missing)
	for _, leaf := range missing {
		t.Errorf("dist/chart/values.yaml has %s, which docs/install.md's values table does not name", leaf)
	}
}

func hasPrefix(leaves map[string]any, k string) bool {
	for leaf := range leaves {
		if strings.HasPrefix(leaf, k+".") {
			return true
		}
	}
	return false
}

// flatten records every value below v by its dotted path; maps with keys are walked, anything
// else (lists, scalars, empty maps) is a leaf.
func flatten(prefix string, v any, out map[string]any) {
	if m, ok := v.(map[string]any); ok && len(m) > 0 {
		for k, e := range m {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, e, out)
		}
		return
	}
	out[prefix] = v
}

func mustYAML(t *testing.T, v any) string {
	t.Helper()
	if v == nil {
		return "null"
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
