package install_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/parley-dev/parley/test/support/doctable"
	"github.com/parley-dev/parley/test/support/repopath"
)

// TestPermissionsListMatchesRBAC: docs/operations.md's Permissions section names every Role and
// ClusterRole of config/rbac, and only those; and what it says of two of them holds: the
// manager may not mint ServiceAccount tokens, and the user Role reaches the Session API's
// service proxy with https and with http.
func TestPermissionsListMatchesRBAC(t *testing.T) {
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "rbac", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string][]rbacv1.PolicyRule{}
	for _, f := range files {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal(mustRead(t, f), &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if obj.Kind == "Role" || obj.Kind == "ClusterRole" {
			roles[obj.Metadata.Name] = obj.Rules
		}
	}
	if len(roles) < 10 {
		t.Fatalf("config/rbac has %d roles", len(roles))
	}
	text, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := doctable.Section(string(text), "## Permissions", "## ")
	documented := map[string]bool{}
	for _, c := range doctable.Codes(section) {
		if strings.HasSuffix(c, "-role") || strings.HasSuffix(c, "-reader") {
			// As config/rbac names it, or as dist/install.yaml installs it (kustomize's prefix).
			documented[strings.TrimPrefix(c, "parley-")] = true
		}
	}
	for name := range roles {
		if !documented[name] {
			t.Errorf("config/rbac's %s is not in docs/operations.md's Permissions", name)
		}
	}
	for name := range documented {
		if _, ok := roles[name]; !ok {
			t.Errorf("docs/operations.md's Permissions names %s, which config/rbac does not have", name)
		}
	}

	for _, r := range roles["manager-role"] {
		if slices.Contains(r.Resources, "serviceaccounts/token") {
			t.Errorf("manager-role grants serviceaccounts/token (%v); the docs say it may not", r.Verbs)
		}
	}
	var proxy []string
	for _, r := range roles["session-api-user-role"] {
		if slices.Contains(r.Resources, "services/proxy") {
			proxy = append(proxy, r.ResourceNames...)
		}
	}
	for _, want := range []string{"https:parley-session-api:https", "http:parley-session-api:https"} {
		if !slices.Contains(proxy, want) {
			t.Errorf("session-api-user-role's service proxy names %v, not %s", proxy, want)
		}
	}
}
