package crashbench

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// podWatch timestamps the arrival of each new pod in the namespace, as the harness's watch
// receives it. client-go's RetryWatcher resumes the watch if the API server closes it.
type podWatch struct {
	mu      sync.Mutex
	arrived map[string]time.Time
	waiting map[string]chan time.Time
	stop    func()
}

func watchPods(ctx context.Context) (*podWatch, error) {
	pods := clientset.CoreV1().Pods(namespace)
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
	w := &podWatch{arrived: map[string]time.Time{}, waiting: map[string]chan time.Time{}, stop: rw.Stop}
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

func (w *podWatch) add(name string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.waiting[name]; ok {
		ch <- at
		delete(w.waiting, name)
		return
	}
	w.arrived[name] = at
}

// expect returns a channel that receives the arrival time of pod name (at once if it came).
func (w *podWatch) expect(name string) <-chan time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan time.Time, 1)
	if at, ok := w.arrived[name]; ok {
		ch <- at
		return ch
	}
	w.waiting[name] = ch
	return ch
}
