package historystore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestConcurrentSecretMissesShareOneRead: when a Secret's cached read runs out, the callers
// that miss together (every busy conversation of a namespace) make one read, and all of them
// get the Secret.
func TestConcurrentSecretMissesShareOneRead(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int32
	release := make(chan struct{})
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s3"}, Data: map[string][]byte{"k": []byte("v")},
	}).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads.Add(1)
			<-release
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	s := &Stores{Secrets: c}

	const callers = 16
	var wg sync.WaitGroup
	got := make(chan *corev1.Secret, callers)
	for range callers {
		wg.Go(func() {
			secret, err := s.secret(context.Background(), types.NamespacedName{Namespace: "ns", Name: "s3"})
			if err != nil {
				t.Error(err)
			}
			got <- secret
		})
	}
	time.Sleep(100 * time.Millisecond) // let the callers reach the read
	close(release)
	wg.Wait()
	close(got)
	for secret := range got {
		if secret == nil || string(secret.Data["k"]) != "v" {
			t.Errorf("a caller got %v, want the Secret", secret)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads for %d concurrent misses, want 1", n, callers)
	}
}
