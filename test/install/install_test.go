// Package install_test installs Parley the way most people and Argo CD do, with client-side
// `kubectl apply -f`, on a real kube-apiserver (envtest), and checks that admission still
// validates the agent pod template after the CRD lost the Pod's field descriptions.
//
// It runs the real kubectl (a prerequisite of the repository, like Go): client-side apply is
// kubectl's own three-way merge with the last-applied-configuration annotation, and a copy of
// that logic would prove less than the binary people type. KUBECTL names another binary.
package install_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/repopath"
)

const (
	lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
	// annotationLimit is the apiserver's limit on all of an object's annotations together.
	annotationLimit = 256 * 1024
	// annotationBudget keeps half of the limit free: a CRD that grows toward the limit fails
	// here, in review, rather than on a user's `kubectl apply`.
	annotationBudget = annotationLimit / 2
)

var conversationCRD = "conversations.parley.dev"

// kube is envtest plus what the test needs to drive it: a kubeconfig file for kubectl, its own
// discovery cache, and a client.
type kube struct {
	root       string
	kubectl    string
	kubeconfig string
	cacheDir   string
	client     client.Client
	discovery  discovery.DiscoveryInterface
	// cfg is the admin's: copy it to act as someone else (rest.ImpersonationConfig).
	cfg *rest.Config
}

func start(t *testing.T) *kube {
	t.Helper()
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := os.Getenv("KUBECTL")
	if kubectl == "" {
		if kubectl, err = exec.LookPath("kubectl"); err != nil {
			t.Fatal("kubectl is not on the PATH (a prerequisite, see README.md); set KUBECTL to use another binary")
		}
	}
	assets, err := kubeenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest from %s: %v", assets, err)
	}
	t.Cleanup(func() { _ = env.Stop() })

	admin, err := env.AddUser(envtest.User{Name: "install-test", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &kube{
		root: root, kubectl: kubectl, kubeconfig: kubeconfig, cacheDir: filepath.Join(dir, "cache"),
		client: c, discovery: dc, cfg: cfg,
	}
}

// run runs kubectl with stdin and returns its combined output and error.
func (k *kube) run(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.kubectl, args...)
	cmd.Dir = k.root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig, "KUBECACHEDIR="+k.cacheDir)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// apply is `kubectl apply -f file` exactly as typed: client-side, the default.
func (k *kube) apply(ctx context.Context, t *testing.T, file string) string {
	t.Helper()
	out, err := k.run(ctx, "", "apply", "-f", file)
	if err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", file, err, out)
	}
	return out
}

// waitServed waits until the Conversation CRD is Established and its kind is in discovery
// (before that, kubectl says "no matches for kind").
func (k *kube) waitServed(ctx context.Context, t *testing.T) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k.client.Get(ctx, client.ObjectKey{Name: conversationCRD}, crd); err != nil {
			return false, nil //nolint:nilerr // not created yet: keep polling
		}
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		if !established {
			return false, nil
		}
		list, err := k.discovery.ServerResourcesForGroupVersion("parley.dev/v1alpha1")
		if err != nil {
			return false, nil //nolint:nilerr // not in discovery yet
		}
		for _, r := range list.APIResources {
			if r.Name == "conversations" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the Conversation CRD is not served: %v", err)
	}
}

// lastAppliedSize is the size of the CRD's last-applied-configuration annotation; it fails when
// there is none (then the apply was not client-side).
func (k *kube) lastAppliedSize(ctx context.Context, t *testing.T, name string) int {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k.client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	n := len(crd.Annotations[lastApplied])
	if n == 0 {
		t.Fatalf("%s has no %s annotation: not applied client-side", name, lastApplied)
	}
	return n
}

// conversation is a Conversation named name whose agent container is container (YAML, indented
// for its place in the list).
func conversation(name, container string) string {
	return fmt.Sprintf(`apiVersion: parley.dev/v1alpha1
kind: Conversation
metadata:
  name: %s
  namespace: default
spec:
  history:
    configMap: {}
  agent:
    template:
      metadata:
        labels: {app: agent}
      spec:
        containers:
        - %s
`, name, strings.ReplaceAll(strings.TrimSpace(container), "\n", "\n          "))
}

var conversationGVK = schema.GroupVersionKind{Group: "parley.dev", Version: "v1alpha1", Kind: "Conversation"}

func TestClientSideApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k := start(t)

	t.Run("the CRDs install with kubectl apply -f config/crd/bases", func(t *testing.T) {
		out := k.apply(ctx, t, "config/crd/bases")
		t.Logf("kubectl apply -f config/crd/bases:\n%s", out)
		k.waitServed(ctx, t)
		n := k.lastAppliedSize(ctx, t, conversationCRD)
		t.Logf("%s: %s is %d bytes (limit %d for all annotations)", conversationCRD, lastApplied, n, annotationLimit)
		if n > annotationBudget {
			t.Errorf("the Conversation CRD's last-applied annotation is %d bytes, over the budget of %d (half the apiserver's limit): "+
				"keep large embedded schemas free of descriptions (tools/slim-crd)", n, annotationBudget)
		}
	})

	t.Run("kubectl explain says the template is a Pod template and points to the Pod's docs", func(t *testing.T) {
		// The API server publishes a new CRD's OpenAPI a moment after it is served: until then
		// kubectl explain cannot find the resource.
		var out string
		var err error
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
			out, err = k.run(ctx, "", "explain", "conversation.spec.agent.template")
			if err == nil || !strings.Contains(out, "couldn't find resource") || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatalf("kubectl explain: %v\n%s", err, out)
		}
		t.Logf("kubectl explain conversation.spec.agent.template:\n%s", out)
		for _, want := range []string{"a Pod template", "kubectl explain pod.spec", "metadata", "spec"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl explain conversation.spec.agent.template does not say %q:\n%s", want, out)
			}
		}
	})

	t.Run("admission refuses an invalid agent pod template with a readable message", func(t *testing.T) {
		tests := map[string]struct {
			container string
			want      []string
		}{
			"a container without a name": {
				container: "image: agent:1",
				want:      []string{"spec.agent.template.spec.containers[0].name: Required value"},
			},
			"a port that is not a number": {
				container: "name: agent\nimage: agent:1\nports:\n- containerPort: http",
				want: []string{
					"spec.agent.template.spec.containers[0].ports[0].containerPort",
					"must be of type integer",
				},
			},
			"a misspelt field": {
				container: "name: agent\nimagee: agent:1",
				want:      []string{`unknown field "spec.agent.template.spec.containers[0].imagee"`},
			},
			"an env list of strings": {
				container: "name: agent\nimage: agent:1\nenv: [DEBUG]",
				want:      []string{"spec.agent.template.spec.containers[0].env[0]", "must be of type object"},
			},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				obj := conversation("refused", tc.container)
				out, err := k.run(ctx, obj, "apply", "-f", "-")
				if err == nil {
					t.Fatalf("kubectl apply accepted:\n%s\noutput: %s", obj, out)
				}
				t.Logf("kubectl apply refused it: %s", strings.TrimSpace(out))
				if !strings.Contains(out, `The Conversation "refused" is invalid`) && !strings.Contains(out, "unknown field") {
					t.Errorf("the refusal does not come from the apiserver's validation: %s", out)
				}
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Errorf("the message does not say %q: %s", w, out)
					}
				}
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(conversationGVK)
				if err := k.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "refused"}, u); !apierrors.IsNotFound(err) {
					t.Errorf("the refused Conversation exists (get: %v)", err)
				}
			})
		}
	})

	t.Run("a valid agent pod template is accepted and kept whole", func(t *testing.T) {
		container := `name: agent
image: agent:1
imagePullPolicy: Never
args: [serve]
ports:
- {containerPort: 8080, name: http}
env:
- name: POD
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
resources:
  limits: {cpu: 500m, memory: 1Gi}`
		out, err := k.run(ctx, conversation("accepted", container), "apply", "-f", "-")
		if err != nil {
			t.Fatalf("kubectl apply refused a valid Conversation: %v\n%s", err, out)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(conversationGVK)
		if err := k.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "accepted"}, u); err != nil {
			t.Fatal(err)
		}
		// Fields the schema did not know would have been pruned without a word.
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "agent", "template", "spec", "containers")
		if len(containers) != 1 {
			t.Fatalf("containers = %v", containers)
		}
		c, _ := containers[0].(map[string]any)
		for _, f := range []string{"image", "imagePullPolicy", "args", "ports", "env", "resources"} {
			if _, ok := c[f]; !ok {
				t.Errorf("the stored container lost %q: %v", f, c)
			}
		}
		if got, _, _ := unstructured.NestedString(u.Object, "spec", "agent", "template", "metadata", "labels", "app"); got != "agent" {
			t.Errorf("template label app = %q, want agent", got)
		}
	})

	t.Run("dist/install.yaml installs with kubectl apply -f, twice, then server-side", func(t *testing.T) {
		// A cluster that never had Parley: the CRDs are created by this apply, not updated.
		if out, err := k.run(ctx, "", "delete", "-f", "config/crd/bases", "--wait=true"); err != nil {
			t.Fatalf("kubectl delete -f config/crd/bases: %v\n%s", err, out)
		}
		out := k.apply(ctx, t, "dist/install.yaml")
		t.Logf("kubectl apply -f dist/install.yaml:\n%s", out)
		for _, want := range []string{
			"namespace/parley-system created",
			"customresourcedefinition.apiextensions.k8s.io/conversations.parley.dev created",
			"customresourcedefinition.apiextensions.k8s.io/checkpoints.parley.dev created",
			"deployment.apps/parley-controller-manager created",
			"service/parley-session-api created",
			"service/parley-controller-manager-metrics-service created",
			"clusterrole.rbac.authorization.k8s.io/parley-manager-role created",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the apply did not say %q", want)
			}
		}
		k.lastAppliedSize(ctx, t, conversationCRD)
		k.waitServed(ctx, t)

		// The same file again changes nothing: kubectl's three-way merge finds no difference.
		out = k.apply(ctx, t, "dist/install.yaml")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasSuffix(line, " unchanged") {
				t.Errorf("a second apply changed something: %q", line)
			}
		}

		// Moving to server-side apply later (as Flux does, or Argo CD with ServerSideApply=true)
		// works on top of it.
		if out, err := k.run(ctx, "", "apply", "--server-side", "--force-conflicts", "-f", "dist/install.yaml"); err != nil {
			t.Errorf("kubectl apply --server-side -f dist/install.yaml after client-side apply: %v\n%s", err, out)
		}

		// The CRDs that came with the installer validate the template too.
		out, err := k.run(ctx, conversation("refused", "image: agent:1"), "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "spec.agent.template.spec.containers[0].name: Required value") {
			t.Errorf("a container without a name was not refused after installing dist/install.yaml (err %v): %s", err, out)
		}
	})
}
