// Package specwatch proves that nobody wrote an object's spec while a test ran: it records
// every version of one object a watch delivers and checks that each has the generation and the
// spec of the first. The controller records what it decides in status only, so a GitOps tool
// that applied the spec sees no drift; the envtest and e2e specs of idle agents check it.
package specwatch

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// version is what the check compares of one version of the object.
type version struct {
	resourceVersion string
	generation      int64
	spec            any
}

// Watch records the versions of one object. Start it before the writes it is to judge.
type Watch struct {
	w watch.Interface

	mu       sync.Mutex
	versions []version
	closed   chan struct{}
}

// Start watches the object name of resource in namespace (the first event is the object as it
// is). Stop ends the watch.
func Start(ctx context.Context, c dynamic.Interface, resource schema.GroupVersionResource, namespace, name string) (*Watch, error) {
	w, err := c.Resource(resource).Namespace(namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("watching %s %s/%s: %w", resource.Resource, namespace, name, err)
	}
	sw := &Watch{w: w, closed: make(chan struct{})}
	go sw.record()
	return sw, nil
}

func (sw *Watch) record() {
	defer close(sw.closed)
	for ev := range sw.w.ResultChan() {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type == watch.Deleted {
			continue
		}
		spec, _, _ := unstructured.NestedFieldCopy(u.Object, "spec")
		sw.mu.Lock()
		sw.versions = append(sw.versions, version{resourceVersion: u.GetResourceVersion(), generation: u.GetGeneration(), spec: spec})
		sw.mu.Unlock()
	}
}

// Stop ends the watch.
func (sw *Watch) Stop() {
	sw.w.Stop()
	<-sw.closed
}

// Seen is how many versions the watch delivered so far.
func (sw *Watch) Seen() int {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return len(sw.versions)
}

// Unchanged returns an error naming the first version whose generation or spec differs from
// the first version's, or when fewer than minVersions were seen: a watch that saw none of the
// writes under test (status included) proves nothing.
func (sw *Watch) Unchanged(minVersions int) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if len(sw.versions) < minVersions {
		return fmt.Errorf("the watch saw %d versions, fewer than the %d the test's writes make", len(sw.versions), minVersions)
	}
	first := sw.versions[0]
	for _, v := range sw.versions[1:] {
		if v.generation != first.generation {
			return fmt.Errorf("a spec write at resourceVersion %s: generation %d, was %d", v.resourceVersion, v.generation, first.generation)
		}
		if !equality.Semantic.DeepEqual(v.spec, first.spec) {
			return fmt.Errorf("spec changed at resourceVersion %s: %v, was %v", v.resourceVersion, v.spec, first.spec)
		}
	}
	return nil
}
