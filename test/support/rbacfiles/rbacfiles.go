// Package rbacfiles reads the Roles and ClusterRoles of config/rbac (a file may hold several,
// as the generated role.yaml does), so that tests check what the install grants.
package rbacfiles

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/parley-dev/parley/test/support/repopath"
)

// Role is a Role or a ClusterRole as config/rbac names it (without kustomize's prefix).
type Role struct {
	Kind  string
	Name  string
	Rules []rbacv1.PolicyRule
}

// Roles returns every Role and ClusterRole of config/rbac by name.
func Roles() (map[string]Role, error) {
	root, err := repopath.Root()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "rbac", "*.yaml"))
	if err != nil {
		return nil, err
	}
	out := map[string]Role{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			var obj struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Rules []rbacv1.PolicyRule `json:"rules"`
			}
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if obj.Kind != "Role" && obj.Kind != "ClusterRole" {
				continue
			}
			if _, dup := out[obj.Metadata.Name]; dup {
				return nil, fmt.Errorf("%s: a second role named %s", f, obj.Metadata.Name)
			}
			out[obj.Metadata.Name] = Role{Kind: obj.Kind, Name: obj.Metadata.Name, Rules: obj.Rules}
		}
	}
	return out, nil
}
