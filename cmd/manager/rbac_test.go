package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/parley-dev/parley/test/support/repopath"
)

// TestManagerCannotMintTokens: the manager's ClusterRole (generated from the RBAC markers,
// shipped in dist/install.yaml and the chart) grants no right to create ServiceAccount tokens,
// which would make whoever takes over the manager any ServiceAccount of the cluster.
func TestManagerCannotMintTokens(t *testing.T) {
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(raw, &role); err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		core := slices.Contains(r.APIGroups, "") || slices.Contains(r.APIGroups, "*")
		tokens := slices.Contains(r.Resources, "serviceaccounts/token") || slices.Contains(r.Resources, "*")
		if core && tokens && (slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "*")) {
			t.Errorf("the manager's ClusterRole may create ServiceAccount tokens: %+v", r)
		}
	}
}
