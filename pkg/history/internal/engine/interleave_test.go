package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/parley-dev/parley/pkg/history"
)

// Tests of interleavings the conformance suite cannot arrange: a backend
// whose operations can be intercepted, shared by several stores (processes).

// convName is the conversation of these tests.
const convName = "c"

type hookBackend struct {
	mu    sync.Mutex
	convs map[string]*hookObjects
}

func (b *hookBackend) Objects(name string, _ *metav1.OwnerReference) (Objects, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.convs == nil {
		b.convs = map[string]*hookObjects{}
	}
	o, ok := b.convs[name]
	if !ok {
		o = &hookObjects{items: map[string]hookItem{}}
		b.convs[name] = o
	}
	return o, nil
}

type hookItem struct {
	data    []byte
	version string
}

type hookObjects struct {
	mu      sync.Mutex
	items   map[string]hookItem
	version int
	// hook, when set, runs before every operation (without the lock held);
	// a non-nil error is returned instead of performing the operation.
	hook func(op, key string) error
	// lostReply, when set, is asked after a successful replace whether to
	// answer ErrUnavailable anyway (the server applied it, the answer was lost).
	lostReply func(key string) bool
	// stall, when set, is asked before every operation whether to hang it
	// until its context ends.
	stall func(op, key string) bool
	// maxBytes, when set, refuses larger objects as a backend does.
	maxBytes int
}

func (o *hookObjects) before(ctx context.Context, op, key string) error {
	o.mu.Lock()
	hook, stall := o.hook, o.stall
	o.mu.Unlock()
	if stall != nil && stall(op, key) {
		<-ctx.Done()
		return ctx.Err()
	}
	if hook == nil {
		return nil
	}
	return hook(op, key)
}

func (o *hookObjects) setHook(hook func(op, key string) error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.hook = hook
}

func (o *hookObjects) Get(ctx context.Context, key string) ([]byte, string, error) {
	if err := o.before(ctx, "get", key); err != nil {
		return nil, "", err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	it, ok := o.items[key]
	if !ok {
		return nil, "", fmt.Errorf("%s: %w", key, history.ErrNotFound)
	}
	return append([]byte(nil), it.data...), it.version, nil
}

func (o *hookObjects) Create(ctx context.Context, key string, data []byte) (string, error) {
	if err := o.before(ctx, "create", key); err != nil {
		return "", err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.checkSize(key, data); err != nil {
		return "", err
	}
	if _, ok := o.items[key]; ok {
		return "", fmt.Errorf("%s exists: %w", key, history.ErrConflict)
	}
	return o.put(key, data), nil
}

func (o *hookObjects) checkSize(key string, data []byte) error {
	if o.maxBytes > 0 && len(data) > o.maxBytes {
		return fmt.Errorf("%s has %d bytes: %w", key, len(data), history.ErrTooLarge)
	}
	return nil
}

func (o *hookObjects) Replace(ctx context.Context, key string, data []byte, version string) (string, error) {
	if err := o.before(ctx, "replace", key); err != nil {
		return "", err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.checkSize(key, data); err != nil {
		return "", err
	}
	it, ok := o.items[key]
	if !ok {
		return "", fmt.Errorf("%s: %w", key, history.ErrNotFound)
	}
	if it.version != version {
		return "", fmt.Errorf("%s changed: %w", key, history.ErrConflict)
	}
	v := o.put(key, data)
	if o.lostReply != nil && o.lostReply(key) {
		return "", fmt.Errorf("%s: reply lost: %w", key, history.ErrUnavailable)
	}
	return v, nil
}

func (o *hookObjects) put(key string, data []byte) string {
	o.version++
	v := strconv.Itoa(o.version)
	o.items[key] = hookItem{data: append([]byte(nil), data...), version: v}
	return v
}

func (o *hookObjects) Delete(ctx context.Context, key string) error {
	if err := o.before(ctx, "delete", key); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.items, key)
	return nil
}

func (o *hookObjects) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := o.before(ctx, "list", prefix); err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []ObjectInfo
	for key, it := range o.items {
		if strings.HasPrefix(key, prefix) {
			out = append(out, ObjectInfo{Key: key, Size: int64(len(it.data))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (o *hookObjects) keys() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, len(o.items))
	for k := range o.items {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// hookStores returns n stores over one backend, as n processes would see it,
// and the objects of the conversation convName.
func hookStores(t *testing.T, n int, opts Options) ([]*Store, *hookObjects) {
	t.Helper()
	b := &hookBackend{}
	stores := make([]*Store, 0, n)
	for range n {
		s := New(b, opts)
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	o, _ := b.Objects(convName, nil)
	return stores, o.(*hookObjects)
}

func openHook(t *testing.T, s *Store) history.History {
	t.Helper()
	h, err := s.Open(context.Background(), convName, history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func appendOne(t *testing.T, h history.History, id string) {
	t.Helper()
	if _, err := h.Append(context.Background(), []history.Record{{ID: id, Data: []byte(`"` + id + `"`)}}); err != nil {
		t.Fatalf("append %s: %v", id, err)
	}
}

func readEpoch(h history.History, epoch uint64) ([]history.Entry, error) {
	var out []history.Entry
	for e, err := range history.All(context.Background(), h, epoch, 1) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

func checkEntries(t *testing.T, what string, entries []history.Entry, err error, n int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(entries) != n {
		t.Fatalf("%s: %d entries, want %d", what, len(entries), n)
	}
	for i, e := range entries {
		if e.Seq != uint64(i+1) || string(e.Data) != `"`+e.ID+`"` {
			t.Fatalf("%s: entry %d is %+v", what, i, e)
		}
	}
}

// A reader lists an epoch's sealed segments while a compaction's first
// attempt has sealed the tail and is losing its race to an append; the
// retry seals a longer range, and Retain later deletes the shorter segment
// as redundant. The reader's cached listing still names it: its reads of
// the old epoch must list again, not fail for ever.
func TestReadAfterRetainDeletedCachedSegment(t *testing.T) {
	stores, objs := hookStores(t, 3, Options{MaxTailObjects: 4})
	compactor := openHook(t, stores[0])
	for i := 1; i <= 10; i++ {
		appendOne(t, compactor, fmt.Sprintf("m-%d", i))
	}
	var reader history.History
	fired := false
	objs.setHook(func(op, key string) error {
		if op != "replace" || key != indexKey || fired {
			return nil
		}
		fired = true // the compaction is about to move the index: race it
		appendOne(t, openHook(t, stores[1]), "m-11")
		reader = openHook(t, stores[2])
		entries, err := readEpoch(reader, 0)
		checkEntries(t, "read during the compaction", entries, err, 11)
		return nil
	})
	if _, err := compactor.NewEpoch(context.Background(), history.EpochRequest{
		Epoch: 1, Through: 10, Records: []history.Record{{ID: "s-1", Data: []byte(`"s-1"`)}},
	}); err != nil {
		t.Fatal(err)
	}
	objs.setHook(nil)
	if !fired {
		t.Fatal("the compaction never moved the index")
	}
	before := len(objs.keys())
	if err := compactor.Retain(context.Background(), history.Retention{KeepEpochs: 1}); err != nil {
		t.Fatal(err)
	}
	if len(objs.keys()) == before {
		t.Fatalf("Retain deleted nothing; the test needs a redundant segment (objects %v)", objs.keys())
	}
	entries, err := readEpoch(reader, 1)
	checkEntries(t, "read of the old epoch after Retain", entries, err, 11)
}

// errInProgress is what S3 answers a conditional create that races another
// upload of the same key (409 ConditionalRequestConflict): the object may
// never appear if that other upload fails.
var errInProgress = fmt.Errorf("%w: ConditionalRequestConflict", history.ErrConflict)

// failFirstCreate makes the first create of a matching key fail with
// errInProgress without writing anything.
func failFirstCreate(objs *hookObjects, match func(key string) bool) *bool {
	fired := new(bool)
	var mu sync.Mutex
	objs.setHook(func(op, key string) error {
		mu.Lock()
		defer mu.Unlock()
		if op == "create" && match(key) && !*fired {
			*fired = true
			return errInProgress
		}
		return nil
	})
	return fired
}

// A seal whose create conflicts must not count the segment as written
// unless it exists: the index would say the range is sealed and the entries
// it carried (or the tail objects holding them) would be dropped.
func TestSealCreateConflictWithoutObject(t *testing.T) {
	stores, objs := hookStores(t, 2, Options{MaxTailObjects: 4})
	h := openHook(t, stores[0])
	fired := failFirstCreate(objs, IsSealedKey)
	for i := 1; i <= 6; i++ {
		appendOne(t, h, fmt.Sprintf("m-%d", i))
		stores[0].WaitBackground() // the background seal after the fourth fails
	}
	if !*fired {
		t.Fatal("no seal happened")
	}
	entries, err := readEpoch(openHook(t, stores[1]), 0)
	checkEntries(t, "read from another store", entries, err, 6)
}

func TestCheckpointCreateConflictWithoutObject(t *testing.T) {
	stores, objs := hookStores(t, 1, Options{})
	h := openHook(t, stores[0])
	fired := failFirstCreate(objs, func(key string) bool { return strings.HasPrefix(key, checkpointPrefix) })
	d, err := h.PutCheckpoint(context.Background(), []byte("snapshot"))
	if !*fired {
		t.Fatal("no checkpoint create")
	}
	if err == nil {
		if _, err := h.GetCheckpoint(context.Background(), d); err != nil {
			t.Fatalf("PutCheckpoint returned %s, but: %v", d, err)
		}
	} else if !history.IsRetryable(err) {
		t.Fatalf("PutCheckpoint: %v, want a retryable error", err)
	}
}

// A swap whose index write landed but whose answer was lost is retried; the
// retry must recognise its own swap rather than report that another writer
// won (ErrConflict), and nothing may be swapped twice.
func TestNewEpochLostReply(t *testing.T) {
	stores, objs := hookStores(t, 1, Options{})
	h := openHook(t, stores[0])
	for i := 1; i <= 3; i++ {
		appendOne(t, h, fmt.Sprintf("m-%d", i))
	}
	lost := 0
	objs.mu.Lock()
	objs.lostReply = func(key string) bool {
		lost++
		return key == indexKey && lost == 1
	}
	objs.mu.Unlock()
	head, err := h.NewEpoch(context.Background(), history.EpochRequest{
		Epoch: 1, Through: 2, Records: []history.Record{{ID: "s-1", Data: []byte(`"s-1"`)}},
	})
	if lost == 0 {
		t.Fatal("the swap never wrote the index")
	}
	if err != nil {
		t.Fatalf("NewEpoch whose index write landed: %v", err)
	}
	if head.Epoch != 2 || head.Sequence != 2 {
		t.Fatalf("head %+v, want epoch 2 with 2 entries", head)
	}
	entries, err := readEpoch(h, 0)
	if err != nil || len(entries) != 2 || entries[0].ID != "s-1" || entries[1].ID != "m-3" {
		t.Fatalf("epoch 2: %+v, %v; want s-1, m-3", entries, err)
	}
}

// A commit that outlives OpTimeout (the backend hangs) fails an Append whose
// own context is fine: that is a transient failure, ErrUnavailable, and the
// retry by id succeeds.
func TestCommitTimeoutIsUnavailable(t *testing.T) {
	stores, objs := hookStores(t, 1, Options{OpTimeout: 20 * time.Millisecond})
	h := openHook(t, stores[0])
	stalled := false
	objs.mu.Lock()
	objs.stall = func(op, key string) bool {
		if op == "replace" && key == indexKey && !stalled {
			stalled = true
			return true
		}
		return false
	}
	objs.mu.Unlock()
	recs := []history.Record{{ID: "m-1", Data: []byte(`"m-1"`)}}
	_, err := h.Append(context.Background(), recs)
	if !errors.Is(err, history.ErrUnavailable) || !history.IsRetryable(err) {
		t.Fatalf("append whose commit timed out: %v, want ErrUnavailable", err)
	}
	if seqs, err := h.Append(context.Background(), recs); err != nil || seqs[0] != 1 {
		t.Fatalf("retry: %v, %v; want sequence 1", seqs, err)
	}
}

// The history cap is checked against the handle's view of the index, which
// may be stale: after another process compacted and dropped old epochs, an
// append that fits must not be refused (and keep being refused) because of
// the old size.
func TestCapUsesFreshIndex(t *testing.T) {
	stores, _ := hookStores(t, 2, Options{MaxHistoryBytes: 100})
	writer, compactor := openHook(t, stores[0]), openHook(t, stores[1])
	ctx := context.Background()
	big := []history.Record{{ID: "big", Data: []byte(`"` + strings.Repeat("x", 78) + `"`)}}
	if _, err := writer.Append(ctx, big); err != nil {
		t.Fatal(err)
	}
	head, err := compactor.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := history.EpochRequest{Epoch: head.Epoch, Through: head.Sequence, Records: []history.Record{{ID: "s", Data: []byte(`"s"`)}}}
	if _, err := compactor.NewEpoch(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := compactor.Retain(ctx, history.Retention{}); err != nil {
		t.Fatal(err)
	}
	if u, err := compactor.Usage(ctx); err != nil || u.Head.Bytes != 3 || u.Epochs != 1 {
		t.Fatalf("after compaction and retention: %+v, %v", u, err)
	}
	rec := []history.Record{{ID: "next", Data: []byte(`"` + strings.Repeat("y", 48) + `"`)}}
	for range 2 {
		if _, err := writer.Append(ctx, rec); err != nil {
			t.Fatalf("append of 50 bytes to a history of 3 (cap 100): %v", err)
		}
	}
}

// Open with Create whose index create conflicts (S3's 409 to a create
// racing another upload that then fails) must not hand out a handle to a
// history that does not exist.
func TestOpenCreateConflictWithoutIndex(t *testing.T) {
	stores, objs := hookStores(t, 1, Options{})
	fired := failFirstCreate(objs, func(key string) bool { return key == indexKey })
	h, err := stores[0].Open(context.Background(), convName, history.OpenOptions{Create: true})
	if !*fired {
		t.Fatal("no index create")
	}
	if err != nil {
		if !history.IsRetryable(err) {
			t.Fatalf("open: %v, want success or a retryable error", err)
		}
		return
	}
	appendOne(t, h, "m-1")
}

// An Append whose context ends while its commit is moving the index returns
// the context's error, yet the commit lands; the retry with the same ids
// gets the same sequences and stores nothing twice.
func TestCanceledAppendThatLandedRetries(t *testing.T) {
	stores, objs := hookStores(t, 2, Options{})
	h := openHook(t, stores[0])
	appendOne(t, h, "m-1")
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	var once sync.Once
	objs.setHook(func(op, key string) error {
		if op == "replace" && key == indexKey {
			once.Do(func() {
				cancel()
				<-returned // the caller has given up; the commit goes on
			})
		}
		return nil
	})
	recs := []history.Record{{ID: "m-2", Data: []byte(`"m-2"`)}, {ID: "m-3", Data: []byte(`"m-3"`)}}
	if _, err := h.Append(ctx, recs); !errors.Is(err, context.Canceled) {
		t.Fatalf("append whose context ended: %v, want context.Canceled", err)
	}
	close(returned)
	seqs, err := h.Append(context.Background(), recs)
	if err != nil || len(seqs) != 2 || seqs[0] != 2 || seqs[1] != 3 {
		t.Fatalf("retry: %v, %v; want [2 3]", seqs, err)
	}
	entries, err := readEpoch(openHook(t, stores[1]), 0)
	checkEntries(t, "read from another store", entries, err, 3)
}

// Another process deleted the history (its Conversation was deleted and
// created again). Once this process's handle has found its index gone, Open
// with Create must give a working history, not the dead shared handle.
func TestOpenCreateAfterDeleteByAnotherStore(t *testing.T) {
	stores, _ := hookStores(t, 2, Options{})
	ctx := context.Background()
	h := openHook(t, stores[0])
	appendOne(t, h, "m-1")
	if err := stores[1].Delete(ctx, convName); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Append(ctx, []history.Record{{ID: "m-2", Data: []byte(`"m-2"`)}}); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("append to a deleted history: %v, want ErrNotFound", err)
	}
	h2 := openHook(t, stores[0])
	seqs, err := h2.Append(ctx, []history.Record{{ID: "m-3", Data: []byte(`"m-3"`)}})
	if err != nil || seqs[0] != 1 {
		t.Fatalf("append after Open with Create: %v, %v; want sequence 1", seqs, err)
	}
}
