package validation

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var _ = Describe("config/samples", func() {
	It("are all admitted by the apiserver", func() {
		dir := filepath.Join(repoRoot, "config", "samples")
		entries, err := os.ReadDir(dir)
		Expect(err).NotTo(HaveOccurred())
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "samples"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		applied := 0
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".yaml") || e.Name() == "kustomization.yaml" {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			Expect(err).NotTo(HaveOccurred())
			obj := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed(), e.Name())
			obj.SetNamespace("samples")
			Expect(k8sClient.Create(ctx, obj)).To(Succeed(), "sample %s was rejected", e.Name())
			applied++
		}
		Expect(applied).To(BeNumerically(">=", 4))
	})
})
