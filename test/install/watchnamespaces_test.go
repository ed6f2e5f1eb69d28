package install_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/test/support/managerproc"
)

const (
	managerSA   = "system:serviceaccount:" + installNS + ":parley-controller-manager"
	watchedNS   = "team-a"
	unwatchedNS = "team-b"
)

// managerGroups are the groups the API server gives the manager's ServiceAccount token.
var managerGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + installNS, "system:authenticated"}

// TestChartWatchNamespaces installs the chart with watchNamespaces={team-a} on a real
// kube-apiserver (envtest authorises with RBAC) and asks, as the manager's ServiceAccount
// (impersonated), what it may do: its namespaced rights hold in team-a only, its cluster-scoped
// rights cluster-wide. Then it runs the manager binary as that ServiceAccount with
// --watch-namespaces=team-a: a Conversation with an agent in team-a gets its history and its
// agent pod, one in team-b is left alone, and no request of the manager is forbidden.
func TestChartWatchNamespaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	k := start(t)
	helm := tool(t, "HELM", "helm")
	kubectl := k.must(ctx, t)
	for _, ns := range []string{watchedNS, unwatchedNS} {
		kubectl("create", "namespace", ns)
	}
	runTool(t, k.helmEnv(t), helm, "install", "parley", chartDir, "--namespace", installNS, "--create-namespace",
		"--set", "watchNamespaces={"+watchedNS+"}")
	k.waitServed(ctx, t)

	checkWatchedNamespaceRights(ctx, t, k)
	checkRoleScopes(t, k, kubectl, "-n "+watchedNS+" role/parley-manager-role")

	// The manager binary, as the ServiceAccount, with only the chart's rights.
	logPath := runManagerAs(t, k, managerSA, managerGroups,
		"--watch-namespaces="+watchedNS, "--leader-election-namespace="+installNS)
	for _, ns := range []string{watchedNS, unwatchedNS} {
		yaml := strings.Replace(conversation("chat", "name: agent\nimage: example.com/agent:1"), "namespace: default", "namespace: "+ns, 1)
		if out, err := k.run(ctx, yaml, "apply", "-f", "-"); err != nil {
			t.Fatalf("creating the Conversation in %s: %v\n%s", ns, err, out)
		}
	}
	jsonpath := func(ns, obj, path string) string {
		out, _ := k.run(ctx, "", "-n", ns, "get", obj, "-o", "jsonpath="+path)
		return strings.TrimSpace(out)
	}
	pod := "pod/" + agentpod.PodName("chat", 1)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		available := jsonpath(watchedNS, "conversation/chat", `{.status.conditions[?(@.type=="HistoryAvailable")].status}`)
		return available == "True" && jsonpath(watchedNS, pod, "{.metadata.name}") != "", nil
	})
	if err != nil {
		t.Fatalf("the Conversation in %s got no history or no agent pod from the manager with namespaced rights: %v\n%s",
			watchedNS, err, tail(t, logPath))
	}
	if got := jsonpath(watchedNS, pod, "{.metadata.ownerReferences[0].kind}"); got != "Conversation" {
		t.Errorf("the agent pod's owner is %q", got)
	}
	if got := jsonpath(unwatchedNS, "conversation/chat", "{.status}"); got != "" {
		t.Errorf("the Conversation in %s, which the manager does not watch, has a status: %s", unwatchedNS, got)
	}
	// The leader keeps the APIService's caBundle (a cluster-scoped right by name).
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return jsonpath("", "apiservice/v1alpha1.session.parley.dev", "{.spec.caBundle}") != "", nil
	})
	if err != nil {
		t.Errorf("the manager wrote no caBundle into the APIService: %v", err)
	}
	logs, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(logs), "\n") {
		if strings.Contains(line, "forbidden") {
			t.Errorf("the manager was refused a request: %s", line)
		}
	}
}

// TestKustomizeWatchNamespaces applies docs/install.md's overlay that scopes the installer to
// team-a (test/install/testdata/kustomize-watch-namespaces) and asks what the manager may do:
// the same as with the chart's watchNamespaces, its ClusterRole of namespaced rights bound in
// team-a alone.
func TestKustomizeWatchNamespaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k := start(t)
	kubectl := k.must(ctx, t)
	for _, ns := range []string{watchedNS, unwatchedNS} {
		kubectl("create", "namespace", ns)
	}
	kubectl("apply", "-k", "test/install/testdata/kustomize-watch-namespaces")
	args := kubectl("-n", installNS, "get", "deployment", "parley-controller-manager", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
	if !strings.Contains(args, `"--watch-namespaces=`+watchedNS+`"`) {
		t.Errorf("the overlay's manager args: %s", args)
	}
	checkWatchedNamespaceRights(ctx, t, k)
	checkRoleScopes(t, k, kubectl, "clusterrole/parley-manager-role")
}

// must returns kubectl as the admin, failing the test on an error, with its output trimmed.
func (k *kube) must(ctx context.Context, t *testing.T) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		out, err := k.run(ctx, "", args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(out)
	}
}

// checkWatchedNamespaceRights asks the API server (kubectl auth can-i, impersonating the
// manager's ServiceAccount) what the manager may do: its namespaced rights in watchedNS only,
// its cluster-scoped rights cluster-wide.
func checkWatchedNamespaceRights(ctx context.Context, t *testing.T, k *kube) {
	t.Helper()
	// kubectl auth can-i through impersonation: the API server's authorizer answers.
	impersonate := make([]string, 0, 2+2*len(managerGroups))
	impersonate = append(impersonate, "--as", managerSA)
	for _, g := range managerGroups {
		impersonate = append(impersonate, "--as-group", g)
	}
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"create", "pods", "-n", watchedNS}, true},
		{[]string{"create", "pods", "-n", unwatchedNS}, false},
		{[]string{"list", "pods", "--all-namespaces"}, false},
		{[]string{"get", "secrets", "-n", watchedNS}, true},
		{[]string{"get", "secrets", "-n", unwatchedNS}, false},
		{[]string{"get", "secrets", "-n", "kube-system"}, false},
		{[]string{"list", "configmaps", "-n", watchedNS}, true},
		{[]string{"list", "configmaps", "-n", unwatchedNS}, false},
		{[]string{"create", "configmaps", "-n", unwatchedNS}, false},
		{[]string{"list", "conversations.parley.dev", "-n", watchedNS}, true},
		{[]string{"list", "conversations.parley.dev", "-n", unwatchedNS}, false},
		{[]string{"create", "events.events.k8s.io", "-n", unwatchedNS}, false},
		{[]string{"create", "serviceaccounts/token", "-n", watchedNS}, false},
		// What stays cluster-scoped: reviews, Nodes (NodeLost), the APIService by name, and
		// the front-proxy settings in kube-system.
		{[]string{"create", "tokenreviews.authentication.k8s.io"}, true},
		{[]string{"create", "subjectaccessreviews.authorization.k8s.io"}, true},
		{[]string{"watch", "nodes"}, true},
		{[]string{"patch", "apiservices.apiregistration.k8s.io/v1alpha1.session.parley.dev"}, true},
		{[]string{"patch", "apiservices.apiregistration.k8s.io/v1.apps"}, false},
		{[]string{"get", "configmaps/extension-apiserver-authentication", "-n", "kube-system"}, true},
		{[]string{"get", "configmaps/kube-root-ca.crt", "-n", "kube-system"}, false},
	} {
		args := append(append([]string{"auth", "can-i"}, c.args...), impersonate...)
		out, err := k.run(ctx, "", args...)
		// The answer starts the last line (kubectl warns first when a resource is not
		// namespaced, and may give the reason after a "no").
		lines := strings.Split(strings.TrimSpace(out), "\n")
		answer, _, _ := strings.Cut(strings.TrimSpace(lines[len(lines)-1]), " ")
		if answer != "yes" && answer != "no" {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if got := answer == "yes"; got != c.want {
			t.Errorf("the manager may %s: %s, want %v", strings.Join(c.args, " "), answer, c.want)
		}
	}
}

// checkRoleScopes: every resource of namespacedRole, the role bound in the watched namespace,
// is namespaced (a cluster-scoped one there would grant nothing), and every resource of the
// manager's cluster-scoped ClusterRole is cluster-scoped (a namespaced one would be granted in
// every namespace), as the API server's discovery says.
func checkRoleScopes(t *testing.T, k *kube, kubectl func(...string) string, namespacedRole string) {
	t.Helper()
	// The aggregated group has no manager behind it yet: its discovery fails, the rest answers.
	_, lists, err := k.discovery.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatal(err)
	}
	namespaced := map[string]bool{}
	for _, l := range lists {
		group := strings.Split(l.GroupVersion, "/")
		g := ""
		if len(group) == 2 {
			g = group[0]
		}
		for _, r := range l.APIResources {
			namespaced[g+"/"+r.Name] = r.Namespaced
		}
	}
	for _, c := range []struct {
		obj        string
		namespaced bool
	}{
		{namespacedRole, true},
		{"clusterrole/parley-manager-cluster-role", false},
	} {
		var role rbacv1.ClusterRole // a Role's fields, too
		if err := json.Unmarshal([]byte(kubectl(append(strings.Fields("get "+c.obj), "-o", "json")...)), &role); err != nil {
			t.Fatal(err)
		}
		if len(role.Rules) == 0 {
			t.Fatalf("%s has no rules", c.obj)
		}
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					// A subresource is scoped as its resource (finalizers is not in discovery).
					base, _, _ := strings.Cut(res, "/")
					ns, known := namespaced[g+"/"+base]
					if !known {
						t.Errorf("%s names %s/%s, which the API server does not serve", c.obj, g, res)
					} else if ns != c.namespaced {
						t.Errorf("%s names %s/%s, namespaced=%v", c.obj, g, res, ns)
					}
				}
			}
		}
	}
}

// runManagerAs builds the manager binary and runs it with a kubeconfig that impersonates user
// and groups, with the extra args; it returns the path of its log. The Session API listens on
// a free loopback port with its own CA (POD_NAMESPACE: the install's namespace).
func runManagerAs(t *testing.T, k *kube, user string, groups []string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	bin, err := managerproc.Build(k.root, dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(k.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	auth := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	auth.Impersonate, auth.ImpersonateGroups = user, groups
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	port, err := managerproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "manager.log")
	p, err := managerproc.Start(bin, append([]string{
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		fmt.Sprintf("--session-api-bind-address=127.0.0.1:%d", port),
	}, args...), []string{"KUBECONFIG=" + kubeconfig, "POD_NAMESPACE=" + installNS}, logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	return logPath
}

// tail is the end of a log, for a failure message.
func tail(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}
