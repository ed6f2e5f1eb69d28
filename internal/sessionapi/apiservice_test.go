package sessionapi

import (
	"context"
	"encoding/base64"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestAPIServiceCABundleFollowsTheTrustedCAs: the APIService's caBundle becomes the CAs
// clients trust, is patched again when they change (a CA rotation) and not while they stay;
// a missing APIService is no error.
func TestAPIServiceCABundleFollowsTheTrustedCAs(t *testing.T) {
	ctx := context.Background()
	svc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"group": "session.parley.dev"}}}
	svc.SetGroupVersionKind(apiServiceKind)
	svc.SetName(APIServiceName)
	patches := 0
	c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(svc).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	trusted := []byte("-----BEGIN CERTIFICATE-----\nfirst\n-----END CERTIFICATE-----\n")
	a := &APIServiceCABundle{Client: c, Name: APIServiceName, TrustedCA: func() []byte { return trusted }}
	caBundle := func() string {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(apiServiceKind)
		if err := c.Get(ctx, client.ObjectKey{Name: APIServiceName}, got); err != nil {
			t.Fatal(err)
		}
		s, _, _ := unstructured.NestedString(got.Object, "spec", "caBundle")
		b, _ := base64.StdEncoding.DecodeString(s)
		return string(b)
	}
	for range 2 {
		if err := a.sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if caBundle() != string(trusted) || patches != 1 {
		t.Fatalf("caBundle %q after %d patches; want the trusted CAs after one", caBundle(), patches)
	}
	trusted = append(trusted, "-----BEGIN CERTIFICATE-----\nnext\n-----END CERTIFICATE-----\n"...)
	if err := a.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if caBundle() != string(trusted) || patches != 2 {
		t.Fatalf("caBundle %q after %d patches; want both CAs after a second", caBundle(), patches)
	}
	missing := &APIServiceCABundle{Client: c, Name: "v1.elsewhere", TrustedCA: func() []byte { return trusted }}
	if err := missing.sync(ctx); err != nil {
		t.Fatalf("a missing APIService: %v", err)
	}
}
