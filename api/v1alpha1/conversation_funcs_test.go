package v1alpha1

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/parley-dev/parley/test/support/repopath"
)

// The defaults consumers read from the API type are the CRD's defaults.
func TestDefaultsMatchTheCRD(t *testing.T) {
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "parley.dev_conversations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema crdSchema `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil || len(crd.Spec.Versions) != 1 {
		t.Fatalf("CRD: %v", err)
	}
	maxBytes := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.at(t, "spec", "history", "objectStore", "maxBytes")
	def, _ := maxBytes.Default.(string)
	got, err := resource.ParseQuantity(def)
	if err != nil || got.Value() != DefaultObjectStoreMaxBytes {
		t.Fatalf("objectStore.maxBytes defaults to %q in the CRD, %d in DefaultObjectStoreMaxBytes", maxBytes.Default, int64(DefaultObjectStoreMaxBytes))
	}
	if (&ObjectStoreHistory{}).GetMaxBytes() != DefaultObjectStoreMaxBytes {
		t.Fatal("GetMaxBytes of an unset maxBytes is not the default")
	}
}

type crdSchema struct {
	Default    any                  `json:"default"`
	Properties map[string]crdSchema `json:"properties"`
}

func (s crdSchema) at(t *testing.T, path ...string) crdSchema {
	t.Helper()
	for _, p := range path {
		next, ok := s.Properties[p]
		if !ok {
			t.Fatalf("the CRD has no %s", p)
		}
		s = next
	}
	return s
}
