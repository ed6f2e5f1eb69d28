package session

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history"
)

// TestActivityEveryFlushWithActivityChangesStatus: appends after a flush, within the same
// second, must still change status.lastActivityTime at the next flush, since only a change
// wakes the controller that counts them into status.
func TestActivityEveryFlushWithActivityChangesStatus(t *testing.T) {
	conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	var patches []string
	c := activityClient(t, func(obj client.Object, patch client.Patch) error {
		data, err := patch.Data(obj)
		patches = append(patches, string(data))
		return err
	}, conv)

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

// TestActivityHandsOffToTheLocalController: on the replica that runs the controller, a flush
// writes nothing and wakes the reconcile, which takes the time; what it gives back (a failed
// status write) is handed over again; what it leaves untaken for handOffTimeout, or at
// shutdown, the flush writes itself.
func TestActivityHandsOffToTheLocalController(t *testing.T) {
	conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	key := client.ObjectKeyFromObject(conv)
	var patches int
	c := activityClient(t, func(client.Object, client.Patch) error { patches++; return nil }, conv)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	local := make(chan struct{})
	a := &Activity{Client: c, Now: func() time.Time { return now }, Local: local}
	ctx := context.Background()
	wakes := a.wakeChannel()

	// Not (yet) the leader: the flush patches.
	a.Touch(conv)
	a.Flush(ctx)
	if patches != 1 || len(wakes) != 0 {
		t.Fatalf("before the lease: %d patches, %d wakes; want 1 and 0", patches, len(wakes))
	}

	close(local)
	a.Touch(conv)
	a.Flush(ctx)
	if patches != 1 || len(wakes) != 1 {
		t.Fatalf("holding the lease: %d patches, %d wakes; want no new patch and 1 wake", patches, len(wakes))
	}
	<-wakes
	at, head, ok := a.Take(key)
	if !ok || !at.Equal(now) || head != nil {
		t.Fatalf("Take = %v, %v, %v; want %v, no head (Touch tells none), true", at, head, ok, now)
	}
	if _, _, ok := a.Take(key); ok {
		t.Fatal("the activity was taken twice")
	}

	a.Restore(key, at) // the reconcile's status write failed
	a.Flush(ctx)
	if got, _, ok := a.Take(key); !ok || !got.Equal(at) || len(wakes) != 1 || patches != 1 {
		t.Fatalf("after Restore: Take = %v, %v with %d wakes, %d patches; want %v handed over again", got, ok, len(wakes), patches, at)
	}
	<-wakes

	a.Touch(conv)
	a.Flush(ctx)
	now = now.Add(handOffTimeout)
	a.Flush(ctx)
	if patches != 2 {
		t.Fatalf("activity untaken for %s: %d patches, want it written (2)", handOffTimeout, patches)
	}
	if _, _, ok := a.Take(key); ok {
		t.Fatal("activity the flush wrote is still handed over")
	}

	a.Touch(conv)
	a.Flush(ctx)
	a.flush(ctx, true, everything)
	if patches != 3 {
		t.Fatalf("at shutdown: %d patches, want the untaken activity written (3)", patches)
	}
}

// TestActivityWaitsItsIntervalPerConversation: a conversation's activity is flushed once the
// oldest of it is an interval old, not at a tick shared by all, so the status writes of
// conversations that became active at different times do not come in one burst.
func TestActivityWaitsItsIntervalPerConversation(t *testing.T) {
	a1 := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	b1 := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}
	var written []string
	c := activityClient(t, func(obj client.Object, _ client.Patch) error {
		written = append(written, obj.GetName())
		return nil
	}, a1, b1)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	a := &Activity{Client: c, Now: func() time.Time { return now }, Interval: time.Second}
	ctx := context.Background()
	tick := func(d time.Duration) []string {
		now = now.Add(d)
		written = nil
		a.flush(ctx, false, recordedBy(now.Add(-a.interval())))
		return written
	}

	a.Touch(a1)
	if got := tick(600 * time.Millisecond); len(got) != 0 {
		t.Fatalf("0.6 s after the first append: wrote %v, want nothing yet", got)
	}
	a.Touch(a1) // a later append joins the waiting one: it does not restart the clock
	a.Touch(b1)
	if got := tick(400 * time.Millisecond); len(got) != 1 || got[0] != "a" {
		t.Fatalf("1 s after a's first append, 0.4 s after b's: wrote %v, want [a]", got)
	}
	if got := tick(600 * time.Millisecond); len(got) != 1 || got[0] != "b" {
		t.Fatalf("1 s after b's first append: wrote %v, want [b]", got)
	}
	if got := tick(2 * time.Second); len(got) != 0 {
		t.Fatalf("no activity since: wrote %v", got)
	}
}

// TestActivityWriteFailureWaitsAnInterval: a failed write (the API server down, say) is tried
// again an interval later, not at each of the interval's checks.
func TestActivityWriteFailureWaitsAnInterval(t *testing.T) {
	conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	attempts := 0
	c := activityClient(t, func(client.Object, client.Patch) error {
		attempts++
		return errors.New("the API server is down")
	}, conv)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	a := &Activity{Client: c, Now: func() time.Time { return now }, Interval: time.Second}
	ctx := context.Background()
	check := func(d time.Duration) {
		now = now.Add(d)
		a.flush(ctx, false, recordedBy(now.Add(-a.interval())))
	}
	a.Touch(conv)
	check(time.Second) // due: the first attempt fails
	for range 7 {
		check(time.Second / 8)
	}
	if attempts != 1 {
		t.Fatalf("%d attempts within the interval after a failure, want 1", attempts)
	}
	check(time.Second / 8)
	if attempts != 2 {
		t.Fatalf("%d attempts an interval after the failure, want 2", attempts)
	}
}

// activityClient is a fake client holding convs whose status patches go through onPatch
// first: it records them and answers an error to fail one, or nil to let it through.
func activityClient(t *testing.T, onPatch func(obj client.Object, patch client.Patch) error, convs ...*parleyv1alpha1.Conversation) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := parleyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := make([]client.Object, len(convs))
	for i, c := range convs {
		objs[i] = c
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if err := onPatch(obj, patch); err != nil {
					return err
				}
				return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
}

// TestActivityHandsOverTheHeadItsWritesLeft: the hand-over says where this replica's writes
// left the history (the furthest head, across flushes not yet taken) only when every one of
// them said it: a write that did not (an event, a reset), a new epoch in between, or activity
// given back after a failed status write leaves it unknown, and the controller reads the store.
func TestActivityHandsOverTheHeadItsWritesLeft(t *testing.T) {
	conv := &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	key := client.ObjectKeyFromObject(conv)
	c := activityClient(t, func(client.Object, client.Patch) error { return nil }, conv)
	now := time.Date(2026, 11, 26, 17, 0, 0, 0, time.UTC)
	local := make(chan struct{})
	close(local)
	a := &Activity{Client: c, Now: func() time.Time { return now }, Local: local}
	ctx := context.Background()
	head := func(epoch, seq uint64) history.Head { return history.Head{Epoch: epoch, Sequence: seq} }
	take := func() *history.Head {
		t.Helper()
		_, h, ok := a.Take(key)
		if !ok {
			t.Fatal("nothing handed over")
		}
		return h
	}

	a.TouchAt(conv, head(1, 5))
	a.TouchAt(conv, head(1, 7))
	a.TouchAt(conv, head(1, 6)) // finished after 7: the furthest counts
	a.Flush(ctx)
	a.TouchAt(conv, head(1, 9)) // a second flush before the reconcile took the first
	a.Flush(ctx)
	if got := take(); got == nil || *got != head(1, 9) {
		t.Fatalf("head %v, want 1/9", got)
	}

	for name, touch := range map[string]func(){
		"a write without a head": func() { a.TouchAt(conv, head(1, 10)); a.Touch(conv) },
		"a new epoch in between": func() { a.TouchAt(conv, head(1, 10)); a.TouchAt(conv, head(2, 1)) },
	} {
		touch()
		a.Flush(ctx)
		if got := take(); got != nil {
			t.Errorf("%s: head %v, want unknown", name, *got)
		}
	}

	a.TouchAt(conv, head(2, 3))
	a.Flush(ctx)
	at, h, _ := a.Take(key)
	if h == nil {
		t.Fatal("no head handed over")
	}
	a.Restore(key, at) // the status write failed
	a.Flush(ctx)
	if got := take(); got != nil {
		t.Errorf("after Restore: head %v, want unknown", *got)
	}
}
