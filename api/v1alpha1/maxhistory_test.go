package v1alpha1

import (
	"path/filepath"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxHistoryBytes is the CRD's own ceiling on objectStore.maxBytes (and above configMap's):
// readers refuse an epoch past it as corrupt, so an honest history must never reach it.
func TestMaxHistoryBytesIsTheCRDCeiling(t *testing.T) {
	ceiling := regexp.MustCompile(`compareTo\(quantity\('([^']+)'\)\) <= 0`)
	for _, schema := range crdSchemasOf(t, filepath.Join("..", "..", "config", "crd", "bases", "parley.dev_conversations.yaml")) {
		for _, backend := range []string{"objectStore", "configMap"} {
			rules, _ := propertyOf(schema, "spec", "history", backend, "maxBytes")["x-kubernetes-validations"].([]any)
			found := false
			for _, r := range rules {
				rule, _ := r.(map[string]any)["rule"].(string)
				if m := ceiling.FindStringSubmatch(rule); m != nil {
					found = true
					q := resource.MustParse(m[1])
					got := q.Value()
					if backend == "objectStore" && got != MaxHistoryBytes || got > MaxHistoryBytes {
						t.Errorf("%s.maxBytes is at most %s (%d bytes); MaxHistoryBytes is %d", backend, m[1], got, MaxHistoryBytes)
					}
				}
			}
			if !found {
				t.Errorf("no ceiling rule on spec.history.%s.maxBytes: %v", backend, rules)
			}
		}
	}
}
