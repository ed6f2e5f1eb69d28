package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// object is one rendered Kubernetes object as a generic map.
type object map[string]any

// decodeAll reads a multi-document YAML stream (kustomize build output).
func decodeAll(data []byte) ([]object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []object
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			return nil, fmt.Errorf("decoding a document: %w", err)
		}
		if o.kind() == "" || o.name() == "" {
			return nil, fmt.Errorf("a document without kind or metadata.name: %.80q", doc)
		}
		out = append(out, o)
	}
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, l := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.Bytes()
}

func (o object) str(path ...string) string {
	v, _ := o.get(path...).(string)
	return v
}

func (o object) get(path ...string) any {
	var v any = map[string]any(o)
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func (o object) kind() string      { return o.str("kind") }
func (o object) name() string      { return o.str("metadata", "name") }
func (o object) namespace() string { return o.str("metadata", "namespace") }

// group is the API group of apiVersion ("" for the core group).
func (o object) group() string {
	g, _, found := strings.Cut(o.str("apiVersion"), "/")
	if !found {
		return ""
	}
	return g
}

// key identifies an object in a render.
func (o object) key() string {
	return o.group() + "/" + o.kind() + "/" + o.namespace() + "/" + o.name()
}
