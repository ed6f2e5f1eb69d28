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

// Object is an RBAC object of config/rbac as it names it (without kustomize's prefix): a Role
// or ClusterRole with its rules, or a binding with the role it refers to.
type Object struct {
	Kind    string
	Name    string
	Rules   []rbacv1.PolicyRule
	RoleRef rbacv1.RoleRef
}

// Roles returns every Role and ClusterRole of config/rbac by name.
func Roles() (map[string]Object, error) {
	objs, err := Objects()
	if err != nil {
		return nil, err
	}
	out := map[string]Object{}
	for _, o := range objs {
		if o.Kind != "Role" && o.Kind != "ClusterRole" {
			continue
		}
		if _, dup := out[o.Name]; dup {
			return nil, fmt.Errorf("config/rbac has two roles named %s", o.Name)
		}
		out[o.Name] = o
	}
	return out, nil
}

// Objects returns every object of config/rbac's YAML files, several per file allowed.
func Objects() ([]Object, error) {
	root, err := repopath.Root()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "rbac", "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []Object
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
				Rules   []rbacv1.PolicyRule `json:"rules"`
				RoleRef rbacv1.RoleRef      `json:"roleRef"`
			}
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if obj.Kind != "" {
				out = append(out, Object{Kind: obj.Kind, Name: obj.Metadata.Name, Rules: obj.Rules, RoleRef: obj.RoleRef})
			}
		}
	}
	return out, nil
}
