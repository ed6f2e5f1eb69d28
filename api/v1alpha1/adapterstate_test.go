package v1alpha1

import (
	"path/filepath"
	"testing"
)

// The bounds the Session API and the controller check are the CRDs' own: a longer value would
// pass them and then make every status write carrying it invalid.
func TestAdapterStateBoundsMatchTheCRDs(t *testing.T) {
	for _, file := range []string{"parley.dev_conversations.yaml", "parley.dev_checkpoints.yaml"} {
		for _, schema := range crdSchemasOf(t, filepath.Join("..", "..", "config", "crd", "bases", file)) {
			for field, want := range map[string]int{"type": MaxAdapterTypeLength, "sessionID": MaxAdapterSessionIDLength} {
				got, _ := propertyOf(schema, "status", "adapterState", field)["maxLength"].(float64)
				if int(got) != want {
					t.Errorf("%s: status.adapterState.%s maxLength %v, the Go bound %d", file, field, got, want)
				}
			}
		}
	}
}

// propertyOf is the schema of a nested property, nil when there is none.
func propertyOf(schema map[string]any, path ...string) map[string]any {
	for _, name := range path {
		props, _ := schema["properties"].(map[string]any)
		schema, _ = props[name].(map[string]any)
	}
	return schema
}
