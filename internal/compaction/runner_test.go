package compaction

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/session"
)

// TestSlowNamespaceHoldsOneWorker: compactions in a namespace that never finish (a summarizer
// endpoint that does not answer) hold one worker; another namespace's compaction still runs.
func TestSlowNamespaceHoldsOneWorker(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := parleyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var mu sync.Mutex
	inFlight, most := 0, 0 // slow's jobs running, now and at most
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		// A job starts by reading its Conversation: slow's jobs hang there, the others find it
		// gone and end at once.
		Get: func(ctx context.Context, _ client.WithWatch, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			if key.Namespace == "slow" {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				mu.Unlock()
				defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return apierrors.NewNotFound(schema.GroupResource{Group: "parley.dev", Resource: "conversations"}, key.Name)
		},
	}).Build()
	r := &Runner{Client: c, Sessions: &session.Sessions{}, Concurrency: 2}
	for _, key := range []struct{ ns, name string }{{"slow", "a"}, {"slow", "b"}, {"other", "x"}} {
		r.Request(Request{Conversation: nn(key.ns, key.name), Epoch: 1})
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Start(ctx) })
	defer func() { close(release); cancel(); wg.Wait() }()

	deadline := time.Now().Add(2 * time.Second)
	for {
		if o, ok := r.Outcome(nn("other", "x")); ok {
			if o.Result != ResultSuperseded {
				t.Fatalf("other/x: %s, want %s", o.Result, ResultSuperseded)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("other/x did not run within 2 s while slow's compactions hang")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := most; n != 1 {
		t.Errorf("%d of slow's compactions ran at once, want 1", n)
	}
}
