// Package doctable reads what the docs state as lists — the rows of a markdown table, the code
// spans of a paragraph — so that tests compare them with the code they describe.
package doctable

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/parley-dev/parley/test/support/repopath"
)

// Table is one markdown table: its header cells and its rows' cells, trimmed.
type Table struct {
	Header []string
	Rows   [][]string
}

// Read returns a file of the repository (e.g. "docs/operations.md") as text.
func Read(rel string) (string, error) {
	root, err := repopath.Root()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	return string(b), err
}

// Tables are the tables of a markdown text, in order.
func Tables(text string) []Table {
	var out []Table
	var cur *Table
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			cur = nil
			continue
		}
		cells := splitRow(line)
		switch {
		case cur == nil:
			out = append(out, Table{Header: cells})
			cur = &out[len(out)-1]
		case isSeparator(cells):
		default:
			cur.Rows = append(cur.Rows, cells)
		}
	}
	return out
}

// Find is the table of the file rel whose first header cell is header; it fails unless there
// is exactly one.
func Find(rel, header string) (Table, error) {
	text, err := Read(rel)
	if err != nil {
		return Table{}, err
	}
	var found []Table
	for _, t := range Tables(text) {
		if len(t.Header) > 0 && t.Header[0] == header {
			found = append(found, t)
		}
	}
	if len(found) != 1 {
		return Table{}, fmt.Errorf("%s has %d tables headed %q, want one", rel, len(found), header)
	}
	return found[0], nil
}

// Column is the cells of the column named header (nil when there is none).
func (t Table) Column(header string) []string {
	for i, h := range t.Header {
		if h != header {
			continue
		}
		col := make([]string, 0, len(t.Rows))
		for _, r := range t.Rows {
			if i < len(r) {
				col = append(col, r[i])
			} else {
				col = append(col, "")
			}
		}
		return col
	}
	return nil
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// Codes are the code spans of a text, in order, with a span like `a-{b,c}-d` expanded to
// a-b-d and a-c-d.
func Codes(text string) []string {
	spans := codeSpan.FindAllStringSubmatch(text, -1)
	out := make([]string, 0, len(spans))
	for _, m := range spans {
		out = append(out, expand(m[1])...)
	}
	return out
}

// Section is the text of a markdown text from the line that starts with start up to the next
// line that starts with one of ends (or the end); "" when no line starts with start.
func Section(text, start string, ends ...string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, start) {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			for _, e := range ends {
				if strings.HasPrefix(lines[j], e) {
					return strings.Join(lines[i:j], "\n")
				}
			}
		}
		return strings.Join(lines[i:], "\n")
	}
	return ""
}

var braces = regexp.MustCompile(`\{([^{}]*,[^{}]*)\}`)

func expand(s string) []string {
	m := braces.FindStringSubmatchIndex(s)
	if m == nil {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[m[2]:m[3]], ",") {
		out = append(out, expand(s[:m[0]]+alt+s[m[1]:])...)
	}
	return out
}

// splitRow splits "| a | b `x|y` |" into its cells; a | inside a code span or escaped as \|
// does not split.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var b strings.Builder
	inCode := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			b.WriteByte('|')
			i++
		case c == '`':
			inCode = !inCode
			b.WriteByte(c)
		case c == '|' && !inCode:
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(cells, strings.TrimSpace(b.String()))
}

func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":-") != "" || c == "" {
			return false
		}
	}
	return true
}
