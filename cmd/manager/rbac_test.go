package main

import (
	"slices"
	"testing"

	"github.com/parley-dev/parley/test/support/rbacfiles"
)

// TestManagerCannotMintTokens: the manager's ClusterRoles (generated from the RBAC markers,
// shipped in dist/install.yaml and the chart) grant no right to create ServiceAccount tokens,
// which would make whoever takes over the manager any ServiceAccount of the cluster.
func TestManagerCannotMintTokens(t *testing.T) {
	roles, err := rbacfiles.Roles()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"manager-role", "manager-cluster-role"} {
		role, ok := roles[name]
		if !ok {
			t.Fatalf("config/rbac has no %s", name)
		}
		for _, r := range role.Rules {
			core := slices.Contains(r.APIGroups, "") || slices.Contains(r.APIGroups, "*")
			tokens := slices.Contains(r.Resources, "serviceaccounts/token") || slices.Contains(r.Resources, "*")
			if core && tokens && (slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "*")) {
				t.Errorf("%s may create ServiceAccount tokens: %+v", name, r)
			}
		}
	}
}
