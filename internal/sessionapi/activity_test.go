package sessionapi

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// TestActivityEveryFlushWithActivityChangesStatus: appends after a flush, within the same
// second, must still change status.lastActivityTime at the next flush, since only a change
// wakes the controller that counts them into status.
func TestActivityEveryFlushWithActivityChangesStatus(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := parleyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	var patches []string
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(conv).WithStatusSubresource(conv).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				data, err := patch.Data(obj)
				if err != nil {
					return err
				}
				patches = append(patches, string(data))
				return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()

	now := time.Date(2026, 11, 23, 14, 0, 0, 100e6, time.UTC)
	a := &Activity{Client: c, Now: func() time.Time { return now }}
	read := func() string {
		got := &parleyv1alpha1.Conversation{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(conv), got); err != nil {
			t.Fatal(err)
		}
		if got.Status.LastActivityTime == nil {
			return ""
		}
		return got.Status.LastActivityTime.UTC().Format(time.RFC3339)
	}

	a.Touch(conv)
	a.Flush(context.Background())
	now = now.Add(800 * time.Millisecond) // 14:00:00.9, the same second
	a.Touch(conv)
	a.Flush(context.Background())
	a.Flush(context.Background()) // no activity since: no write

	if len(patches) != 2 {
		t.Fatalf("%d patches, want 2 (one per flush with activity): %q", len(patches), patches)
	}
	if patches[0] == patches[1] {
		t.Errorf("both flushes wrote %s: the second changes nothing and wakes no reconcile", patches[0])
	}
	if got := read(); got != "2026-11-23T14:00:00Z" {
		t.Errorf("lastActivityTime read back as %s, want 2026-11-23T14:00:00Z (metav1.Time keeps whole seconds)", got)
	}
}
