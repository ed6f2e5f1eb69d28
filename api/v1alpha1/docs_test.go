package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parley-dev/parley/test/support/doctable"
)

// constants are the string constants of this package whose names start with prefix, by value.
func constants(t *testing.T, prefix string) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, prefix) || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out[v] = name.Name
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s… constants found", prefix)
	}
	return out
}

// sameSet fails for every constant the docs do not name, and every name the docs give that
// is no constant.
func sameSet(t *testing.T, what string, consts map[string]string, documented []string) {
	t.Helper()
	named := map[string]bool{}
	for _, d := range documented {
		named[d] = true
	}
	for v, name := range consts {
		if !named[v] {
			t.Errorf("%s (%s) is not in docs/operations.md's %s", v, name, what)
		}
	}
	for v := range named {
		if _, ok := consts[v]; !ok {
			t.Errorf("docs/operations.md's %s names %s, which api/v1alpha1 does not define", what, v)
		}
	}
}

// TestConditionReasonsDocumented: docs/operations.md's conditions table names every condition
// reason api/v1alpha1 defines, and no other.
func TestConditionReasonsDocumented(t *testing.T) {
	table, err := doctable.Find("docs/operations.md", "condition")
	if err != nil {
		t.Fatal(err)
	}
	documented := make([]string, 0, len(table.Rows)*8)
	for _, cell := range table.Column("reasons") {
		documented = append(documented, doctable.Codes(cell)...)
	}
	kept := make([]string, 0, len(documented))
	for _, d := range documented {
		if !strings.Contains(d, ".") { // spec.agent and the like
			kept = append(kept, d)
		}
	}
	reasons := constants(t, "Reason")
	// Defined for a feature the API declares before the manager runs it; no condition has it
	// today, so the table does not list it.
	delete(reasons, ReasonNotImplemented)
	sameSet(t, "conditions table", reasons, kept)
}

// TestEventsDocumented: docs/operations.md's Events paragraph names every Event reason
// api/v1alpha1 defines, and no other.
func TestEventsDocumented(t *testing.T) {
	text, err := doctable.Read("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	section := doctable.Section(text, "**Events**", "**Metrics**")
	if section == "" {
		t.Fatal("docs/operations.md has no **Events** paragraph")
	}
	var documented []string
	for _, c := range doctable.Codes(section) {
		if c[0] >= 'A' && c[0] <= 'Z' && !strings.ContainsAny(c, " .") {
			documented = append(documented, c)
		}
	}
	sameSet(t, "Events paragraph", constants(t, "Event"), documented)
}
