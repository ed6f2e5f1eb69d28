package admission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/test/support/repopath"
)

// TestSamplesRunAgentsAsTheirOwnServiceAccount: the samples people copy give the agent a
// ServiceAccount of its own and bind the agent role to it alone, never to the namespace's
// default ServiceAccount, which every other pod of the namespace runs as.
func TestSamplesRunAgentsAsTheirOwnServiceAccount(t *testing.T) {
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	accounts := map[string]bool{}
	var agents []parleyv1alpha1.Conversation
	var bindings []rbacv1.RoleBinding
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(raw, &meta); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch meta.Kind {
		case "ServiceAccount":
			var sa corev1.ServiceAccount
			if err := yaml.UnmarshalStrict(raw, &sa); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			accounts[sa.Name] = true
		case "Conversation":
			var c parleyv1alpha1.Conversation
			if err := yaml.UnmarshalStrict(raw, &c); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if c.Spec.Agent != nil {
				agents = append(agents, c)
			}
		case "RoleBinding":
			var b rbacv1.RoleBinding
			if err := yaml.UnmarshalStrict(raw, &b); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if strings.HasSuffix(b.RoleRef.Name, "conversation-agent-role") {
				bindings = append(bindings, b)
			}
		}
	}
	if len(agents) == 0 || len(bindings) == 0 {
		t.Fatalf("config/samples holds %d agent Conversations and %d bindings of the agent role", len(agents), len(bindings))
	}
	bound := map[string]bool{}
	for _, b := range bindings {
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Name == "default" {
				t.Errorf("RoleBinding %s gives the agent role to %s %s; only agents' own ServiceAccounts should hold it", b.Name, s.Kind, s.Name)
			}
			bound[s.Name] = true
		}
	}
	for _, c := range agents {
		sa := c.Spec.Agent.Template.Spec.ServiceAccountName
		switch {
		case sa == "" || sa == "default":
			t.Errorf("the sample agent %s runs as the namespace's default ServiceAccount", c.Name)
		case !accounts[sa]:
			t.Errorf("the sample agent %s runs as %s, which no sample creates", c.Name, sa)
		case !bound[sa]:
			t.Errorf("the sample agent %s runs as %s, which no sample binds to the agent role", c.Name, sa)
		}
	}
}
