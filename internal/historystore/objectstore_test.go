package historystore

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history/s3"
)

// An objectStore history gets the cap its spec sets, or the API's default, and histories of
// different caps never share a store (the cap is a store option).
func TestObjectStoreSizeCap(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s3"},
		Data:       map[string][]byte{s3.SecretAccessKeyID: []byte("id"), s3.SecretSecretAccessKey: []byte("secret")},
	}).Build()
	s := &Stores{Secrets: c}
	spec := func(maxBytes string) *parleyv1alpha1.ObjectStoreHistory {
		o := &parleyv1alpha1.ObjectStoreHistory{
			Endpoint: "s3.example.com", Bucket: "parley", CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: "s3"},
		}
		if maxBytes != "" {
			q := resource.MustParse(maxBytes)
			o.MaxBytes = &q
		}
		return o
	}
	ids := map[string]bool{}
	for maxBytes, want := range map[string]int64{"": parleyv1alpha1.DefaultObjectStoreMaxBytes, "1Mi": 1 << 20, "200Mi": 200 << 20} {
		cfg, err := s.s3Config(context.Background(), "ns", spec(maxBytes))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.MaxBytes != want {
			t.Errorf("maxBytes %q: the store caps at %d, want %d", maxBytes, cfg.MaxBytes, want)
		}
		ids[s3ConfigID(cfg)] = true
	}
	if len(ids) != 3 {
		t.Errorf("%d store identities for three caps", len(ids))
	}
}
