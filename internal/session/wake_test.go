package session

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// A wake reaches the controller at once instead of at the next flush: handed over on the
// replica that runs it, patched elsewhere; an hour-long interval proves no flush did it.
func TestWakeHurriesTheActivity(t *testing.T) {
	for _, local := range []bool{true, false} {
		t.Run(fmt.Sprintf("local=%v", local), func(t *testing.T) {
			conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
			var patches atomic.Int32
			c := activityClient(t, func(client.Object, client.Patch) error { patches.Add(1); return nil }, conv)
			lease := make(chan struct{})
			if local {
				close(lease)
			}
			a := &Activity{Client: c, Interval: time.Hour, Local: lease}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = a.Start(ctx); close(done) }()
			defer func() { cancel(); <-done }()

			a.Touch(conv)
			a.Wake(conv)
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				if _, _, ok := a.Take(client.ObjectKeyFromObject(conv)); ok || patches.Load() > 0 {
					if local == (patches.Load() > 0) {
						t.Fatalf("local=%v: %d patches; want a hand-off on the controller's replica, a patch elsewhere", local, patches.Load())
					}
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			t.Fatal("the wake did not reach the controller before the interval")
		})
	}
}

// Many wakes at once: served in arrival order, each conversation once, never more than
// wakeConcurrency patches in flight.
func TestWakeQueueIsBoundedAndFair(t *testing.T) {
	const n = 64
	convs := make([]*parleyv1alpha1.Conversation, n)
	for i := range convs {
		convs[i] = &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("c%02d", i)}}
	}
	var mu sync.Mutex
	var inFlight, peak int
	var order []string
	c := activityClient(t, func(obj client.Object, _ client.Patch) error {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		order = append(order, obj.GetName())
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return nil
	}, convs...)
	a := &Activity{Client: c, Interval: time.Hour}
	for _, conv := range convs {
		a.Touch(conv)
		a.Wake(conv)
		a.Wake(conv) // twice: served once
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.serveWakes(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := len(order)
		mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // a duplicate would land now
	mu.Lock()
	defer mu.Unlock()
	if len(order) != n {
		t.Fatalf("%d patches for %d conversations woken twice each, want %d", len(order), n, n)
	}
	if peak > wakeConcurrency {
		t.Errorf("%d patches in flight at once, want at most %d", peak, wakeConcurrency)
	}
	// Arrival order, up to the workers that run side by side.
	for i, name := range order {
		if pos := indexOf(convs, name); pos < i-wakeConcurrency || pos > i+wakeConcurrency {
			t.Errorf("conversation %s (woken %dth) served %dth", name, pos, i)
		}
	}
}

func indexOf(convs []*parleyv1alpha1.Conversation, name string) int {
	for i, c := range convs {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// A wake whose patch the shutdown cuts short gives its activity back, and the final flush,
// which waits for the wake workers, writes it.
func TestWakeCutShortAtShutdownIsWrittenByTheFinalFlush(t *testing.T) {
	conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	inFlight, release := make(chan struct{}), make(chan struct{})
	var calls, written atomic.Int32
	c := activityClient(t, func(client.Object, client.Patch) error {
		if calls.Add(1) == 1 {
			close(inFlight)
			<-release
			return context.Canceled
		}
		written.Add(1)
		return nil
	}, conv)
	a := &Activity{Client: c, Interval: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Start(ctx); close(done) }()

	a.Touch(conv)
	a.Wake(conv)
	<-inFlight
	cancel()
	time.Sleep(50 * time.Millisecond) // a final flush that does not wait has run by now
	close(release)
	<-done
	if written.Load() != 1 {
		t.Fatalf("%d activity patches written after the wake was cut short, want 1", written.Load())
	}
}
