package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// The manager's rights in the namespaces it serves are the ClusterRole managerRole, bound
// cluster-wide by managerRoleBinding. With watchNamespaces the chart makes them a Role and a
// RoleBinding in each watched namespace instead, so the manager holds no namespaced right
// anywhere else; its cluster-scoped rights (manager-cluster-role) stay bound cluster-wide.
const (
	managerRole        = "parley-manager-role"
	managerRoleBinding = "parley-manager-rolebinding"
	// watchedNamespace stands for the watched namespace in the per-namespace copies until the
	// template text puts the range's value there.
	watchedNamespace = "HELMWATCHEDNAMESPACEX"
)

// isManagerRights says whether o is the manager's ClusterRole of namespaced rights or its
// ClusterRoleBinding.
func isManagerRights(o object) bool {
	return o.kind() == "ClusterRole" && o.name() == managerRole ||
		o.kind() == "ClusterRoleBinding" && o.name() == managerRoleBinding
}

// checkManagerRights fails when the render lacks the manager's ClusterRole or its binding: the
// chart could not scope them to watchNamespaces.
func checkManagerRights(objs []object) error {
	found := 0
	for _, o := range objs {
		if isManagerRights(o) {
			found++
		}
	}
	if found != 2 {
		return fmt.Errorf("config/default renders %d of ClusterRole %s and ClusterRoleBinding %s; "+
			"the chart makes them per watched namespace: teach tools/gen-chart (scope.go) what replaced them",
			found, managerRole, managerRoleBinding)
	}
	return nil
}

// templateManagerRights is o as made without watchNamespaces, and its Role or RoleBinding in
// each watched namespace: files by path.
func templateManagerRights(o object, ns string, d *defaults) (map[string]string, error) {
	files := map[string]string{}
	path, text, err := templateObject(object(runtime.DeepCopyJSON(o)), ns, "not .Values.watchNamespaces", d)
	if err != nil {
		return nil, err
	}
	files[path] = text

	scoped := object(runtime.DeepCopyJSON(o))
	scoped["kind"] = strings.TrimPrefix(o.kind(), "Cluster")
	scoped["metadata"].(map[string]any)["namespace"] = watchedNamespace
	if ref, ok := scoped["roleRef"].(map[string]any); ok {
		ref["kind"] = "Role"
	}
	path, text, err = templateObject(scoped, ns, "", d)
	if err != nil {
		return nil, err
	}
	body := strings.TrimPrefix(text, header)
	// Inside the range "." is the namespace: the release is reached through "$".
	body = strings.ReplaceAll(body, "{{ .Release.", "{{ $.Release.")
	body = strings.Replace(body, watchedNamespace, "{{ . | quote }}", 1)
	files[path] = header + "{{- range .Values.watchNamespaces }}\n---\n" + body + "{{- end }}\n"
	return files, nil
}
