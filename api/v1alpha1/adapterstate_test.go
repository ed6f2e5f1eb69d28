package v1alpha1

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// The bounds the Session API and the controller check are the CRDs' own: a longer value would
// pass them and then make every status write carrying it invalid.
func TestAdapterStateBoundsMatchTheCRDs(t *testing.T) {
	for file, status := range map[string][]string{
		"parley.dev_conversations.yaml": {"status", "adapterState"},
		"parley.dev_checkpoints.yaml":   {"status", "adapterState"},
	} {
		data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
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
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		for _, p := range status {
			s = s.Properties[p]
		}
		for field, want := range map[string]int{"type": MaxAdapterTypeLength, "sessionID": MaxAdapterSessionIDLength} {
			if got := s.Properties[field].MaxLength; got != want {
				t.Errorf("%s: status.adapterState.%s maxLength %d, the Go bound %d", file, field, got, want)
			}
		}
	}
}

type crdSchema struct {
	Properties map[string]crdSchema `json:"properties"`
	MaxLength  int                  `json:"maxLength"`
}
