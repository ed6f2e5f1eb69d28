package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/parley-dev/parley/test/support/repopath"
)

// TestFlagsTableMatchesFlags: docs/operations.md's flags table names every flag the manager
// binds, and no flag it does not.
func TestFlagsTableMatchesFlags(t *testing.T) {
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, row := range regexp.MustCompile("(?m)^\\| `--.*$").FindAllString(string(doc), -1) {
		cell := regexp.MustCompile(`^\| ([^|]*)\|`).FindStringSubmatch(row)[1]
		for _, m := range regexp.MustCompile("`--([a-z0-9-]+)`").FindAllStringSubmatch(cell, -1) {
			documented[m[1]] = true
		}
	}
	var o options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	bindFlags(fs, &o)
	fs.VisitAll(func(f *flag.Flag) {
		if !documented[f.Name] {
			t.Errorf("--%s is not in docs/operations.md's flags table", f.Name)
		}
		delete(documented, f.Name)
	})
	delete(documented, "zap-log-level") // zap's own flags, bound in main
	delete(documented, "zap-encoder")
	for name := range documented {
		t.Errorf("docs/operations.md's flags table names --%s, which the manager does not have", name)
	}
}
