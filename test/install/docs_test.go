package install_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// docsObjects are the Kubernetes objects in the ```yaml blocks of a doc, as text. Blocks of
// kinds the test's apiserver does not serve (a kustomization, Flux's HelmRelease) are returned
// in skipped.
func docsObjects(t *testing.T, root, doc string) (objects, skipped []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	notServed := map[string]bool{"kustomize.config.k8s.io": true, "helm.toolkit.fluxcd.io": true}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(m[1]), &head); err != nil {
			t.Errorf("%s: a yaml block does not parse: %v\n%s", doc, err, m[1])
			continue
		}
		group, _, _ := strings.Cut(head.APIVersion, "/")
		switch {
		case head.Kind == "":
			t.Errorf("%s: a yaml block that is no Kubernetes object:\n%s", doc, m[1])
		case notServed[group]:
			skipped = append(skipped, head.Kind)
		default:
			objects = append(objects, m[1])
		}
	}
	return objects, skipped
}

// checkDocsYAML sends every object of docs/install.md to the apiserver with a server-side dry
// run: it must pass the CRDs' validation as the page shows it.
func checkDocsYAML(ctx context.Context, t *testing.T, k *kube) {
	t.Helper()
	objects, skipped := docsObjects(t, k.root, "docs/install.md")
	conversations := 0
	for _, obj := range objects {
		out, err := k.run(ctx, obj, "apply", "--dry-run=server", "-f", "-")
		if err != nil {
			t.Errorf("docs/install.md: kubectl apply --dry-run=server refused:\n%s\n%v: %s", obj, err, out)
		}
		if strings.Contains(obj, "kind: Conversation\n") {
			conversations++
		}
	}
	t.Logf("docs/install.md: %d objects passed admission (dry run), %v not served here", len(objects), skipped)
	if conversations < 2 {
		t.Errorf("docs/install.md shows %d Conversations; the MinIO and AWS examples are gone?", conversations)
	}
}
