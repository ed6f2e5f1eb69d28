package main

import (
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// A templater turns a rendered object into Helm template text. The transforms put marker tokens
// where template text goes (a scalar, or a whole key with its value), the object is marshalled
// as plain YAML, and the markers are then replaced: the YAML keeps its exact structure and only
// the marked places become template code.
type templater struct {
	scalars map[string]string
	blocks  map[string]blockFunc
	n       int
}

// A blockFunc returns the lines that replace a marker key (without the indentation of the
// marker's line, which is added to every line). indent is that indentation, for nindent.
type blockFunc func(indent int) []string

func newTemplater() *templater {
	return &templater{scalars: map[string]string{}, blocks: map[string]blockFunc{}}
}

// scalar returns a token to put where a scalar value goes; it becomes tmpl.
func (t *templater) scalar(tmpl string) string {
	t.n++
	token := fmt.Sprintf("HELMSCALAR%dX", t.n)
	t.scalars[token] = tmpl
	return token
}

// block returns a key to put into a map (with a nil value); the key's line becomes the block's
// lines. The key sorts where hint would, so the block appears in the place of the field it
// stands for (yaml.Marshal sorts keys).
func (t *templater) block(hint string, f blockFunc) string {
	t.n++
	key := fmt.Sprintf("%s_HELMBLOCK%d", hint, t.n)
	t.blocks[key] = f
	return key
}

var blockLine = regexp.MustCompile(`^( *)(- )?([A-Za-z0-9_.-]+_HELMBLOCK[0-9]+): null$`)

// render marshals obj and replaces the markers. Every marker must be used exactly once: a
// transform whose field is gone from the object fails here instead of silently dropping it.
func (t *templater) render(obj map[string]any) (string, error) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return "", err
	}
	used := map[string]int{}
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if m := blockLine.FindStringSubmatch(line); m != nil && t.blocks[m[3]] != nil {
			used[m[3]]++
			// The first key of a list item: the block's first line takes the "- ", and
			// every line is indented as the item's keys are.
			indent := len(m[1]) + len(m[2])
			lines := t.blocks[m[3]](indent)
			if m[2] != "" && (len(lines) == 0 || strings.HasPrefix(lines[0], "{{")) {
				return "", fmt.Errorf("block %s is the first key of a list item and starts with a template action", m[3])
			}
			for i, l := range lines {
				switch {
				case l == "":
					out = append(out, "")
				case i == 0:
					out = append(out, m[1]+m[2]+l)
				default:
					out = append(out, strings.Repeat(" ", indent)+l)
				}
			}
			continue
		}
		out = append(out, line)
	}
	// Scalars last: blocks may hold scalar markers too (a port item's number).
	for i, line := range out {
		for token, tmpl := range t.scalars {
			if strings.Contains(line, token) {
				used[token] += strings.Count(line, token)
				out[i] = strings.ReplaceAll(out[i], token, tmpl)
			}
		}
	}
	for token := range t.scalars {
		if used[token] != 1 {
			return "", fmt.Errorf("scalar marker %s used %d times", token, used[token])
		}
	}
	for key := range t.blocks {
		if used[key] != 1 {
			return "", fmt.Errorf("block marker %s used %d times", key, used[key])
		}
	}
	return strings.Join(out, "\n") + "\n", nil
}

// escape makes a rendered string safe in a Helm template: "{{" (Prometheus alert templates,
// Grafana legends) is printed by a template action instead of starting one. A raw string
// (backquotes) survives every YAML quoting style the marshaller may choose.
func escape(s string) string {
	return strings.ReplaceAll(s, "{{", "{{`{{`}}")
}

// walkStrings replaces every string value (not keys) below v with f(value).
func walkStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = walkStrings(e, f)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = walkStrings(e, f)
		}
		return x
	case string:
		return f(x)
	default:
		return v
	}
}

// marshalItem renders one list item as the lines of "- item" at indentation 0.
func marshalItem(v any) ([]string, error) {
	b, err := yaml.Marshal([]any{v})
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), nil
}

// indentLines prefixes every non-empty line with n spaces.
func indentLines(lines []string, n int) []string {
	pad := strings.Repeat(" ", n)
	out := make([]string, len(lines))
	for i, l := range lines {
		if l != "" {
			out[i] = pad + l
		}
	}
	return out
}
