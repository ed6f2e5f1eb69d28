package v1alpha1

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// crdDefaults are the accessors of every default: in the generated CRDs, by CRD file and
// field path. Each returns what a consumer reads from the object.
var crdDefaults = map[string]map[string]func(obj any) any{
	"parley.dev_conversations.yaml": {
		"spec.lifetime":                     func(o any) any { return conv(o).Spec.Lifetime },
		"spec.lifetime.ttl":                 func(o any) any { return conv(o).Spec.Lifetime.GetTTL() },
		"spec.lifetime.expirationPolicy":    func(o any) any { return conv(o).Spec.Lifetime.GetExpirationPolicy() },
		"spec.context":                      func(o any) any { return conv(o).Spec.Context },
		"spec.context.compactAtPercent":     func(o any) any { return conv(o).Spec.Context.GetCompactAtPercent() },
		"spec.context.strategy":             func(o any) any { return conv(o).Spec.Context.GetStrategy() },
		"spec.context.keepRecentMessages":   func(o any) any { return conv(o).Spec.Context.GetKeepRecentMessages() },
		"spec.context.tokenizer":            func(o any) any { return conv(o).Spec.Context.GetTokenizer() },
		"spec.agent.maxRestarts":            func(o any) any { return conv(o).Spec.Agent.GetMaxRestarts() },
		"spec.agent.backoff":                func(o any) any { return ptr.Deref(backoff(conv(o)), BackoffSpec{}) },
		"spec.agent.backoff.initial":        func(o any) any { return backoff(conv(o)).GetInitial() },
		"spec.agent.backoff.max":            func(o any) any { return backoff(conv(o)).GetMax() },
		"spec.agent.resumeMountPath":        func(o any) any { return conv(o).Spec.Agent.GetResumeMountPath() },
		"spec.agent.adapter":                func(o any) any { return conv(o).Spec.Agent.GetAdapter() },
		"spec.checkpoints.keep":             func(o any) any { return conv(o).Spec.Checkpoints.GetKeep() },
		"spec.history.configMap.maxBytes":   func(o any) any { return conv(o).Spec.History.ConfigMap.GetMaxBytes() },
		"spec.history.objectStore.maxBytes": func(o any) any { return conv(o).Spec.History.ObjectStore.GetMaxBytes() },
		"spec.seed.format":                  func(o any) any { return conv(o).Spec.Seed.GetFormat() },
		"spec.suspend":                      func(o any) any { return conv(o).Spec.IsSuspended() },
	},
	"parley.dev_checkpoints.yaml": {
		"spec.reason": func(o any) any { return o.(*Checkpoint).Spec.GetReason() },
	},
}

// embeddedTypes are subtrees of the CRDs that hold Kubernetes' own types: their defaults are
// Kubernetes', applied by the apiserver as it validates them, and Parley reads none of them.
var embeddedTypes = map[string][]string{
	"parley.dev_conversations.yaml": {"spec.agent.template"}, // corev1.PodTemplateSpec
}

func conv(o any) *Conversation { return o.(*Conversation) }

// backoff is agent.backoff; nil without an agent, which its accessors read as the defaults.
func backoff(c *Conversation) *BackoffSpec {
	if c.Spec.Agent == nil {
		return nil
	}
	return &c.Spec.Agent.Backoff
}

// TestCRDDefaultsMatchAccessors reads every default: of the generated CRDs and checks that an
// object holding that value reads, through the accessor, the same as an object without it. A
// marker changed without its accessor (or the other way round), a default added without an
// accessor, or an accessor whose default is gone from the CRD fails it.
func TestCRDDefaultsMatchAccessors(t *testing.T) {
	for file, accessors := range crdDefaults {
		t.Run(file, func(t *testing.T) {
			found := crdDefaultsOf(t, filepath.Join("..", "..", "config", "crd", "bases", file), embeddedTypes[file])
			if len(found) == 0 {
				t.Fatal("no default: found; is the CRD generated?")
			}
			for path, value := range found {
				get, ok := accessors[path]
				if !ok {
					t.Errorf("%s has default %s and no accessor in crdDefaults", path, jsonOf(t, value))
					continue
				}
				unset, set := newObject(t, file), newObject(t, file)
				decodeInto(t, set, nested(path, value))
				if got, want := get(unset), get(set); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: the accessor reads %v when unset, %v with the CRD's default %s", path, got, want, jsonOf(t, value))
				}
			}
			for path := range accessors {
				if _, ok := found[path]; !ok {
					t.Errorf("%s has an accessor in crdDefaults but no default: in the CRD", path)
				}
			}
		})
	}
}

// crdDefaultsOf walks the schemas of a CRD file and returns each field's default by path,
// leaving out the subtrees in skip.
func crdDefaultsOf(t *testing.T, file string, skip []string) map[string]any {
	t.Helper()
	found := map[string]any{}
	var walk func(path string, schema map[string]any)
	walk = func(path string, schema map[string]any) {
		if slices.Contains(skip, path) {
			return
		}
		if d, ok := schema["default"]; ok {
			found[path] = d
		}
		props, _ := schema["properties"].(map[string]any)
		for name, sub := range props {
			if s, ok := sub.(map[string]any); ok {
				walk(strings.TrimPrefix(path+"."+name, "."), s)
			}
		}
		for _, key := range []string{"items", "additionalProperties"} {
			if s, ok := schema[key].(map[string]any); ok {
				walk(path+"[]", s)
			}
		}
	}
	for _, schema := range crdSchemasOf(t, file) {
		walk("", schema)
	}
	return found
}

// crdSchemasOf reads the OpenAPI schema of each version of a CRD file.
func crdSchemasOf(t *testing.T, file string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	schemas := make([]map[string]any, 0, len(crd.Spec.Versions))
	for _, v := range crd.Spec.Versions {
		schemas = append(schemas, v.Schema.OpenAPIV3Schema)
	}
	return schemas
}

func newObject(t *testing.T, file string) any {
	t.Helper()
	switch file {
	case "parley.dev_conversations.yaml":
		return &Conversation{}
	case "parley.dev_checkpoints.yaml":
		return &Checkpoint{}
	}
	t.Fatalf("no Go type for %s", file)
	return nil
}

// nested is {"a":{"b":value}} for path a.b.
func nested(path string, value any) any {
	parts := strings.Split(path, ".")
	out := value
	for i := len(parts) - 1; i >= 0; i-- {
		out = map[string]any{parts[i]: out}
	}
	return out
}

func decodeInto(t *testing.T, obj, value any) {
	t.Helper()
	if err := json.Unmarshal([]byte(jsonOf(t, value)), obj); err != nil {
		t.Fatal(err)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
