package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// docStart is how controller-gen begins every CRD file.
const docStart = "---\n"

// decode reads one CRD as controller-gen writes it. Unknown fields are an error: whatever this
// program cannot represent would otherwise be lost without a word when the file is written back.
func decode(data []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(bytes.TrimPrefix(data, []byte(docStart)), crd); err != nil {
		return nil, fmt.Errorf("not a CustomResourceDefinition this program can rewrite: %w", err)
	}
	if crd.Kind != "CustomResourceDefinition" {
		return nil, fmt.Errorf("kind %q, want CustomResourceDefinition", crd.Kind)
	}
	return crd, nil
}

// encode writes crd the way controller-gen does (genall.WriteYAML: typed object to JSON, to a
// map without status and metadata.creationTimestamp, to YAML with sorted keys), so an unchanged CRD comes
// out byte for byte as it went in and the diff of `make manifests` shows only the slimming.
func encode(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	j, err := json.Marshal(crd)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber() // integers stay exact, as in controller-gen
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	y, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return append([]byte(docStart), y...), nil
}

// slim drops every description below the schema at path (property names from the root of each
// version's openAPIV3Schema) and keeps that schema's own description. Types, formats, enums,
// required lists, defaults, bounds, patterns, CEL rules and x-kubernetes-* extensions are left
// as they are: the apiserver validates exactly as before; only `kubectl explain` of the fields
// below path loses its text.
func slim(crd *apiextensionsv1.CustomResourceDefinition, path []string) error {
	if len(path) == 0 {
		return fmt.Errorf("empty schema path")
	}
	if len(crd.Spec.Versions) == 0 {
		return fmt.Errorf("%s has no versions", crd.Name)
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return fmt.Errorf("%s version %s has no schema", crd.Name, v.Name)
		}
		if err := slimAt(v.Schema.OpenAPIV3Schema, path, path); err != nil {
			return fmt.Errorf("%s version %s: %w", crd.Name, v.Name, err)
		}
	}
	return nil
}

// slimAt follows rest through nested properties (map values: each edited copy is stored back).
func slimAt(s *apiextensionsv1.JSONSchemaProps, path, rest []string) error {
	if len(rest) == 0 {
		own := s.Description
		dropDescriptions(s)
		s.Description = own
		return nil
	}
	child, ok := s.Properties[rest[0]]
	if !ok {
		return fmt.Errorf("no schema at .%s", strings.Join(path[:len(path)-len(rest)+1], "."))
	}
	if err := slimAt(&child, path, rest[1:]); err != nil {
		return err
	}
	s.Properties[rest[0]] = child
	return nil
}

// dropDescriptions clears the description of s and of every schema nested in it. It walks the
// schema keywords only (never enum, default or example values, which are data), so a property
// that happens to be called "description" keeps its schema.
func dropDescriptions(s *apiextensionsv1.JSONSchemaProps) {
	s.Description = ""
	for _, m := range []map[string]apiextensionsv1.JSONSchemaProps{s.Properties, s.PatternProperties, s.Definitions} {
		for k, c := range m {
			dropDescriptions(&c)
			m[k] = c
		}
	}
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			dropDescriptions(&list[i])
		}
	}
	for k, d := range s.Dependencies {
		if d.Schema != nil {
			dropDescriptions(d.Schema)
			s.Dependencies[k] = d
		}
	}
	if s.Not != nil {
		dropDescriptions(s.Not)
	}
	if s.Items != nil {
		if s.Items.Schema != nil {
			dropDescriptions(s.Items.Schema)
		}
		for i := range s.Items.JSONSchemas {
			dropDescriptions(&s.Items.JSONSchemas[i])
		}
	}
	for _, b := range []*apiextensionsv1.JSONSchemaPropsOrBool{s.AdditionalProperties, s.AdditionalItems} {
		if b != nil && b.Schema != nil {
			dropDescriptions(b.Schema)
		}
	}
}
