package main

import "slices"

// leaseNamespace is the namespace of the leader-election Lease: the leaderElection.namespace
// value, else the release namespace (what the manager's --leader-election-namespace defaults to).
const leaseNamespace = `{{ .Values.leaderElection.namespace | default .Release.Namespace | quote }}`

// leaseRoles are the names of the Roles that grant rights to Leases: the leader-election Role.
// A Role, not the manager's ClusterRole, so that the manager may touch Leases in one namespace
// only, wherever leaderElection.namespace puts it.
func leaseRoles(objs []object) map[string]bool {
	out := map[string]bool{}
	for _, o := range objs {
		if o.kind() != "Role" {
			continue
		}
		rules, _ := o.get("rules").([]any)
		for _, r := range rules {
			rm, _ := r.(map[string]any)
			groups, _ := stringList(rm["apiGroups"])
			resources, _ := stringList(rm["resources"])
			if slices.Contains(groups, "coordination.k8s.io") && slices.Contains(resources, "leases") {
				out[o.name()] = true
			}
		}
	}
	return out
}

// inLeaseNamespace says whether o is a leader-election Role or a RoleBinding to one.
func (d *defaults) inLeaseNamespace(o object) bool {
	switch o.kind() {
	case "Role":
		return d.leaseRoles[o.name()]
	case "RoleBinding":
		return o.str("roleRef", "kind") == "Role" && d.leaseRoles[o.str("roleRef", "name")]
	}
	return false
}
