// Package podwatch timestamps the arrival of each new pod of a namespace as a watch receives
// it. The benchmarks that time the controller's pod creations stop there: envtest has no
// scheduler or kubelet.
package podwatch

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Watch is the pods seen arriving since Start, by name. client-go's RetryWatcher resumes the
// watch if the API server closes it.
type Watch struct {
	mu      sync.Mutex
	arrived map[string]time.Time
	waiting map[string][]chan time.Time
	stop    func()
}

// Start watches pods from now on: pods that exist already are not arrivals.
func Start(ctx context.Context, pods typedcorev1.PodInterface) (*Watch, error) {
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, o)
		},
	})
	if err != nil {
		return nil, err
	}
	w := &Watch{arrived: map[string]time.Time{}, waiting: map[string][]chan time.Time{}, stop: rw.Stop}
	go func() {
		for ev := range rw.ResultChan() {
			if ev.Type != watch.Added {
				continue
			}
			at := time.Now()
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				w.add(pod.Name, at)
			}
		}
	}()
	return w, nil
}

func (w *Watch) add(name string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.arrived[name] = at
	for _, ch := range w.waiting[name] {
		ch <- at
	}
	delete(w.waiting, name)
}

// Expect returns a channel that receives the arrival time of pod name (at once if it came).
func (w *Watch) Expect(name string) <-chan time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan time.Time, 1)
	if at, ok := w.arrived[name]; ok {
		ch <- at
		return ch
	}
	w.waiting[name] = append(w.waiting[name], ch)
	return ch
}

// Arrived is how many pods arrived since Start.
func (w *Watch) Arrived() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.arrived)
}

// Stop ends the watch.
func (w *Watch) Stop() { w.stop() }
