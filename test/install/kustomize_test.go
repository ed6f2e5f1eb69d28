package install_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestKustomizeApply installs with kubectl's own kustomize, as docs/install.md shows: `kubectl
// apply -k config/default` creates what dist/install.yaml holds (applying the file afterwards
// changes nothing), and an overlay with another image and replica count changes the Deployment
// and nothing else. With the CRDs installed, the objects docs/install.md shows pass admission.
func TestKustomizeApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k := start(t)
	apply := func(args ...string) []string {
		t.Helper()
		out, err := k.run(ctx, "", append([]string{"apply"}, args...)...)
		if err != nil {
			t.Fatalf("kubectl apply %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.Split(strings.TrimSpace(out), "\n")
	}

	created := apply("-k", "config/default")
	t.Logf("kubectl apply -k config/default: %d objects", len(created))
	k.waitServed(ctx, t)
	for _, line := range apply("-f", "dist/install.yaml") {
		if !strings.HasSuffix(line, " unchanged") {
			t.Errorf("dist/install.yaml differs from kubectl apply -k config/default: %q", line)
		}
	}

	for _, line := range apply("-k", "test/install/testdata/kustomize-overlay") {
		changed := !strings.HasSuffix(line, " unchanged")
		if deployment := strings.HasPrefix(line, "deployment.apps/parley-controller-manager "); changed != deployment {
			t.Errorf("the overlay: %q (only the Deployment may change)", line)
		}
	}
	t.Run("docs/install.md YAML passes admission", func(t *testing.T) { checkDocsYAML(ctx, t, k) })

	out, err := k.run(ctx, "", "-n", "parley-system", "get", "deployment", "parley-controller-manager",
		"-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}")
	if want := "3 registry.example.com/parley-manager:v0.1.0"; err != nil || out != want {
		t.Errorf("after the overlay the Deployment has %q (err %v), want %q", out, err, want)
	}
}
