package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

// A schema with something of every kind slim must keep or drop. The Pod-like part is under
// spec.template; the description property, the enum and the default are traps: data that looks
// like a description.
//
//nolint:dupword // "description: description" is the trap under test
const fixture = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.dev
spec:
  group: example.dev
  names: {kind: Thing, listKind: ThingList, plural: things, singular: thing}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        description: Thing is a thing.
        type: object
        properties:
          spec:
            description: spec of the thing.
            type: object
            properties:
              mine:
                description: mine is documented.
                type: string
              template:
                description: template is a Pod template.
                type: object
                required: [spec]
                properties:
                  metadata:
                    description: metadata of the pod.
                    type: object
                    properties:
                      labels:
                        description: labels of the pod.
                        type: object
                        additionalProperties: {description: a label value., type: string}
                  spec:
                    description: spec of the pod.
                    type: object
                    required: [containers]
                    properties:
                      description:
                        description: a field that is called description.
                        type: string
                        enum: [description]
                      policy:
                        description: policy has an enum and a default.
                        type: object
                        default: {description: kept}
                        x-kubernetes-validations:
                        - {rule: "has(self.description)", message: needs a description}
                        properties:
                          description: {description: nested., type: string}
                      containers:
                        description: containers of the pod.
                        type: array
                        x-kubernetes-list-type: map
                        x-kubernetes-list-map-keys: [name]
                        items:
                          description: a container.
                          type: object
                          required: [name]
                          properties:
                            name: {description: name of the container., type: string}
                            port:
                              description: a port.
                              x-kubernetes-int-or-string: true
                              anyOf:
                              - {description: a number., type: integer}
                              - {description: a name., type: string}
                            not: {description: not., not: {description: inner., type: string}}
`

// walk visits every schema keyword-reachable from s, with its property path.
func walk(s *apiextensionsv1.JSONSchemaProps, path string, visit func(string, *apiextensionsv1.JSONSchemaProps)) {
	visit(path, s)
	for k, c := range s.Properties {
		walk(&c, path+"."+k, visit)
	}
	for i := range s.AnyOf {
		walk(&s.AnyOf[i], path+".anyOf", visit)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(s.Items.Schema, path+"[]", visit)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(s.AdditionalProperties.Schema, path+"{}", visit)
	}
	if s.Not != nil {
		walk(s.Not, path+".not", visit)
	}
}

func TestSlimDropsOnlyDescriptionsBelowThePath(t *testing.T) {
	crd, err := decode([]byte(fixture))
	if err != nil {
		t.Fatal(err)
	}
	before := crd.DeepCopy()
	if err := slim(crd, []string{"spec", "template"}); err != nil {
		t.Fatal(err)
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema

	kept := map[string]string{}
	walk(root, "", func(p string, s *apiextensionsv1.JSONSchemaProps) {
		if s.Description != "" {
			kept[p] = s.Description
		}
	})
	want := map[string]string{
		"":               "Thing is a thing.",
		".spec":          "spec of the thing.",
		".spec.mine":     "mine is documented.",
		".spec.template": "template is a Pod template.",
	}
	if len(kept) != len(want) {
		t.Errorf("descriptions left: %v, want %v", kept, want)
	}
	for p, d := range want {
		if kept[p] != d {
			t.Errorf("description at %q = %q, want %q", p, kept[p], d)
		}
	}

	// Clearing every description on both sides must leave identical schemas: nothing but
	// descriptions changed (types, required, enums, defaults, CEL rules, x-kubernetes-*).
	strip := func(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
		c := s.DeepCopy()
		dropDescriptions(c)
		return c
	}
	if !equality.Semantic.DeepEqual(strip(before.Spec.Versions[0].Schema.OpenAPIV3Schema), strip(root)) {
		t.Error("slim changed more than descriptions")
	}
	spec := root.Properties["spec"].Properties["template"].Properties["spec"]
	if got := spec.Properties["description"]; got.Type != "string" || len(got.Enum) != 1 {
		t.Errorf("the property called description lost its schema: %+v", got)
	}
	if got := string(spec.Properties["policy"].Default.Raw); got != `{"description":"kept"}` {
		t.Errorf("default = %s, want it untouched", got)
	}
	if got := spec.Properties["policy"].XValidations; len(got) != 1 || got[0].Message != "needs a description" {
		t.Errorf("CEL rules = %+v, want them untouched", got)
	}
}

func TestSlimErrors(t *testing.T) {
	tests := map[string]struct {
		path []string
		edit func(*apiextensionsv1.CustomResourceDefinition)
		want string
	}{
		"missing property": {path: []string{"spec", "agent", "template"}, want: "no schema at .spec.agent"},
		"empty path":       {path: nil, want: "empty schema path"},
		"no versions": {
			path: []string{"spec"},
			edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions = nil },
			want: "has no versions",
		},
		"no schema": {
			path: []string{"spec"},
			edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Schema = nil },
			want: "version v1 has no schema",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			crd, err := decode([]byte(fixture))
			if err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(crd)
			}
			err = slim(crd, tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("slim = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestDecodeRefusesWhatItCannotWriteBack(t *testing.T) {
	tests := map[string]string{
		"unknown field": strings.Replace(fixture, "  scope: Namespaced", "  scope: Namespaced\n  surprise: true", 1),
		"another kind":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"not YAML":      "{",
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := decode([]byte(doc)); err == nil {
				t.Fatal("decode accepted it")
			}
		})
	}
}

// The generated CRDs come back byte for byte: encode writes what controller-gen writes, and
// the committed Conversation CRD is already slim (running slim again changes nothing).
func TestGeneratedCRDsRoundTrip(t *testing.T) {
	tests := map[string][]string{
		"parley.dev_checkpoints.yaml":   nil,
		"parley.dev_conversations.yaml": {"spec", "agent", "template"},
	}
	for file, path := range tests {
		t.Run(file, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
			if err != nil {
				t.Fatal(err)
			}
			crd, err := decode(in)
			if err != nil {
				t.Fatal(err)
			}
			if path != nil {
				if err := slim(crd, path); err != nil {
					t.Fatal(err)
				}
			}
			out, err := encode(crd)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(in, out) {
				t.Fatalf("%s changed on a round trip (%d -> %d bytes)", file, len(in), len(out))
			}
		})
	}
}

func TestSlimFileShrinksTheFixture(t *testing.T) {
	f := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(f, []byte(fixture), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := slimFile(f, []string{"spec", "template"}); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"a container.", "name of the container.", "a label value.", "inner."} {
		if bytes.Contains(out, []byte(gone)) {
			t.Errorf("%q is still in the file", gone)
		}
	}
	var back apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(out, &back); err != nil {
		t.Fatalf("the written file does not decode: %v", err)
	}
}
