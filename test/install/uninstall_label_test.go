package install_test

import (
	"path/filepath"
	"testing"

	"github.com/parley-dev/parley/test/support/repopath"
)

// installLabel is the label docs/install.md removes a kubectl install by
// (kubectl delete -f dist/install.yaml -l app.kubernetes.io/name=parley).
const installLabel, installLabelValue = "app.kubernetes.io/name", "parley"

// TestUninstallLabelOnEveryObjectButCRDs: an object of dist/install.yaml without the label
// outlives the documented uninstall, and a cluster-scoped one (a ClusterRole) then makes
// `helm install` of the chart refuse to take it over. The CRDs alone go without it, so the
// Conversations a user kept survive.
func TestUninstallLabelOnEveryObjectButCRDs(t *testing.T) {
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	for key, u := range objects(t, mustRead(t, filepath.Join(root, "dist", "install.yaml"))) {
		_, labelled := u.GetLabels()[installLabel]
		if u.GetKind() == "CustomResourceDefinition" {
			if labelled {
				t.Errorf("%s carries %s: the documented uninstall would delete it, and every Conversation with it", key, installLabel)
			}
			continue
		}
		if got := u.GetLabels()[installLabel]; got != installLabelValue {
			t.Errorf("%s: label %s=%q, want %q: the documented uninstall leaves it behind", key, installLabel, got, installLabelValue)
		}
	}
}
