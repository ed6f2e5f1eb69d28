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
// manager may not mint ServiceAccount tokens, and the user Role reads only the published CA
// certificates (people reach the Session API through API aggregation, not the service proxy).
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
	// People reach the Session API through API aggregation: the user Role only lets them read the
	// published CA certificates for direct access, and no longer opens the service proxy.
	var caReads []string
	for _, r := range roles["session-api-user-role"] {
		if slices.Contains(r.Resources, "services/proxy") {
			t.Errorf("session-api-user-role grants the service proxy %v; the docs say people go through API aggregation", r.ResourceNames)
		}
		if slices.Contains(r.Resources, "configmaps") && slices.Contains(r.Verbs, "get") {
			caReads = append(caReads, r.ResourceNames...)
		}
	}
	if !slices.Equal(caReads, []string{"parley-session-api-ca"}) {
		t.Errorf("session-api-user-role reads ConfigMaps %v, not only parley-session-api-ca", caReads)
	}
}
