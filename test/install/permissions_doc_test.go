package install_test

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/parley-dev/parley/test/support/doctable"
	"github.com/parley-dev/parley/test/support/rbacfiles"
	"github.com/parley-dev/parley/test/support/repopath"
)

// TestPermissionsListMatchesRBAC: docs/operations.md's Permissions section names every Role and
// ClusterRole of config/rbac, and only those; and what it says of two of them holds: the
// manager may not mint ServiceAccount tokens, and the user Role reads only the published CA
// certificates (people reach the Session API through API aggregation, not the service proxy).
func TestPermissionsListMatchesRBAC(t *testing.T) {
	objs, err := rbacfiles.Objects()
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string][]rbacv1.PolicyRule{}
	// Kubernetes' own roles that config/rbac binds the manager to may be named too.
	builtin := map[string]bool{}
	for _, o := range objs {
		if o.Kind == "Role" || o.Kind == "ClusterRole" {
			roles[o.Name] = o.Rules
		}
	}
	for _, o := range objs {
		if _, ours := roles[o.RoleRef.Name]; o.RoleRef.Name != "" && !ours {
			builtin[o.RoleRef.Name] = true
		}
	}
	if len(roles) < 10 {
		t.Fatalf("config/rbac has %d roles", len(roles))
	}
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
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
		if _, ok := roles[name]; !ok && !builtin[name] {
			t.Errorf("docs/operations.md's Permissions names %s, which config/rbac does not have", name)
		}
	}

	for _, name := range []string{"manager-role", "manager-cluster-role"} {
		for _, r := range roles[name] {
			if slices.Contains(r.Resources, "serviceaccounts/token") {
				t.Errorf("%s grants serviceaccounts/token (%v); the docs say it may not", name, r.Verbs)
			}
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

// TestManagerRightsAreDocumented: docs/operations.md's table of the manager's rights has a row
// for every verb of every rule of config/rbac/role.yaml (the manager's ClusterRoles, generated
// from the RBAC markers), with its reason, and no row for a right the manager does not hold: a
// right added to the code without its reason fails, and so does a row left behind by a right
// taken away.
func TestManagerRightsAreDocumented(t *testing.T) {
	roles, err := rbacfiles.Roles()
	if err != nil {
		t.Fatal(err)
	}
	granted := map[string]bool{}
	for _, name := range []string{"manager-role", "manager-cluster-role"} {
		role, ok := roles[name]
		if !ok || len(role.Rules) == 0 {
			t.Fatalf("config/rbac/role.yaml has no rules for %s", name)
		}
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						granted[rightKey(name, g, res, r.ResourceNames, v)] = true
					}
				}
			}
		}
	}
	text, err := doctable.Read("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	rows := 0
	for _, table := range doctable.Tables(doctable.Section(text, "## Permissions", "## ")) {
		if len(table.Header) != 5 || table.Header[0] != "manager role" {
			continue
		}
		for _, row := range table.Rows {
			rows++
			role, group, resource, verbs, why := doctable.Codes(row[0]), doctable.Codes(row[1]), doctable.Codes(row[2]), doctable.Codes(row[3]), row[4]
			if len(role) != 1 || len(resource) == 0 || len(verbs) == 0 || strings.TrimSpace(why) == "" {
				t.Errorf("a row that does not say role, resource, verbs and why: %q", row)
				continue
			}
			g := ""
			if row[1] != "core" {
				if len(group) != 1 {
					t.Errorf("a row whose API group is neither core nor one code span: %q", row)
					continue
				}
				g = group[0]
			}
			for _, v := range verbs {
				key := rightKey(role[0], g, resource[0], resource[1:], v)
				if documented[key] {
					t.Errorf("%s twice in the table", key)
				}
				documented[key] = true
			}
		}
	}
	if rows == 0 {
		t.Fatal("docs/operations.md's Permissions has no table headed \"manager role\"")
	}
	for _, k := range sortedKeys(granted) {
		if !documented[k] {
			t.Errorf("config/rbac/role.yaml grants %s; docs/operations.md's table of the manager's rights does not say why", k)
		}
	}
	for _, k := range sortedKeys(documented) {
		if !granted[k] {
			t.Errorf("docs/operations.md lists %s, which config/rbac/role.yaml does not grant", k)
		}
	}
}

// rightKey names one verb on one resource of one manager role.
func rightKey(role, group, resource string, names []string, verb string) string {
	if group == "" {
		group = "core"
	}
	k := role + ": " + verb + " " + group + "/" + resource
	if len(names) > 0 {
		k += " " + strings.Join(names, ",")
	}
	return k
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
