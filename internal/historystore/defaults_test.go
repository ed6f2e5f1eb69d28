package historystore

import (
	"testing"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history/configmap"
)

// TestConfigMapStoreDefaultIsTheAPIs: the ConfigMap store's own default cap (for users of the
// library without the API) is the one the CRD defaults spec.history.configMap.maxBytes to;
// pkg/ does not import the API, so this test ties the two.
func TestConfigMapStoreDefaultIsTheAPIs(t *testing.T) {
	if configmap.DefaultMaxBytes != parleyv1alpha1.DefaultConfigMapMaxBytes {
		t.Errorf("configmap.DefaultMaxBytes is %d, the API's DefaultConfigMapMaxBytes %d", configmap.DefaultMaxBytes, parleyv1alpha1.DefaultConfigMapMaxBytes)
	}
}
