package historytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/history"
)

func testDelete(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	s := newStore(t, hn)
	h := open(t, s, name)
	for i := range 40 {
		mustAppend(t, h, records("d", i, 1))
	}
	if _, err := h.PutCheckpoint(ctx, []byte("snapshot")); err != nil {
		t.Fatal(err)
	}
	// A seal still running in the writer's background could land after the delete from
	// another process, as any writer of another process could (see docs/storage.md).
	waitBackground(s)
	other := newStore(t, hn)
	if err := other.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if keys := rawKeys(t, s, name); len(keys) != 0 {
		t.Fatalf("objects left after delete: %v", keys)
	}
	if _, err := newStore(t, hn).Open(ctx, name, history.OpenOptions{}); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("open after delete: %v, want ErrNotFound", err)
	}
	// A writer that still holds the history cannot resurrect it.
	if _, err := h.Append(ctx, records("late", 0, 1)); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("append after delete: %v, want ErrNotFound", err)
	}
	if err := other.Delete(ctx, name); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	// The name can be used again, from scratch.
	h2 := open(t, newStore(t, hn), name)
	if seqs := mustAppend(t, h2, records("d", 0, 1)); seqs[0] != 1 {
		t.Fatalf("first append after re-create got %d", seqs[0])
	}
}

func testRetention(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	s := newStore(t, hn)
	h := open(t, s, name)
	var digests []history.Digest
	for epoch := uint64(1); epoch <= 4; epoch++ {
		for i := range 35 {
			mustAppend(t, h, records("e", int(epoch)*100+i, 1))
		}
		d, err := h.PutCheckpoint(ctx, []byte{byte(epoch)})
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
		head, err := h.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.NewEpoch(ctx, history.EpochRequest{Epoch: head.Epoch, Through: head.Sequence, Records: records("s", int(epoch), 1)}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := h.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.Epochs != 5 || before.Checkpoints != 4 {
		t.Fatalf("usage before retention %+v, want 5 epochs, 4 checkpoints", before)
	}
	keep := digests[3]
	if err := h.Retain(ctx, history.Retention{KeepEpochs: 1, KeepCheckpoint: func(d history.Digest) bool { return d == keep }}); err != nil {
		t.Fatal(err)
	}
	after, err := h.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Epochs != 2 || after.Checkpoints != 1 || after.Objects >= before.Objects || after.StoredBytes >= before.StoredBytes {
		t.Fatalf("usage after retention %+v (before %+v)", after, before)
	}
	for _, epoch := range []uint64{1, 2, 3} {
		if _, err := h.Read(ctx, history.ReadOptions{Epoch: epoch}); !errors.Is(err, history.ErrNotFound) {
			t.Fatalf("read of dropped epoch %d: %v, want ErrNotFound", epoch, err)
		}
	}
	if old := readAll(t, h, 4); len(old) != 36 {
		t.Fatalf("kept epoch 4 has %d entries, want 36", len(old))
	}
	if cur := readAll(t, h, 0); len(cur) != 1 || cur[0].ID != "s-4" {
		t.Fatalf("current epoch %v, want the one summary", cur)
	}
	if _, err := h.GetCheckpoint(ctx, digests[0]); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("pruned checkpoint: %v, want ErrNotFound", err)
	}
	if _, err := h.GetCheckpoint(ctx, keep); err != nil {
		t.Fatalf("kept checkpoint: %v", err)
	}
}

func testCanceled(t *testing.T, hn Harness) {
	h := open(t, newStore(t, hn), conversationName(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Read(ctx, history.ReadOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("read with a canceled context: %v, want context.Canceled", err)
	}
	if _, err := h.Head(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("head with a canceled context: %v, want context.Canceled", err)
	}
	deadline, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	<-deadline.Done()
	if _, err := h.Append(deadline, records("x", 0, 1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append with an expired context: %v, want context.DeadlineExceeded", err)
	}
}

// testRetainUnderConcurrentAppends: Retain runs in one store while another
// appends (sealing as it goes) and a third reads: Retain deletes only what
// no index can reach, so every acknowledged record stays readable exactly
// once, and readers never see a gap.
func testRetainUnderConcurrentAppends(t *testing.T, hn Harness) {
	ctx := context.Background()
	name := conversationName(t)
	writer := open(t, newStore(t, hn), name)
	reader := open(t, newStore(t, hn), name)
	retainer := open(t, newStore(t, hn), name)
	const workers, perWorker = 4, 40
	var mu sync.Mutex
	acks := map[string]uint64{}
	var writers, others sync.WaitGroup
	var stop atomic.Bool
	errs := make(chan error, workers+2)
	for w := range workers {
		writers.Go(func() {
			for i := range perWorker {
				id := fmt.Sprintf("r%d-%d", w, i)
				seqs, err := writer.Append(ctx, []history.Record{{ID: id, Data: payload(id)}})
				if err != nil {
					errs <- fmt.Errorf("append: %w", err)
					return
				}
				mu.Lock()
				acks[id] = seqs[0]
				mu.Unlock()
			}
		})
	}
	others.Go(func() {
		for !stop.Load() {
			if err := retainer.Retain(ctx, history.Retention{}); err != nil && !history.IsRetryable(err) {
				errs <- fmt.Errorf("retain: %w", err)
				return
			}
		}
	})
	others.Go(func() {
		for !stop.Load() {
			var n uint64
			for e, err := range history.All(ctx, reader, 0, 1) {
				if err != nil {
					if !history.IsRetryable(err) {
						errs <- fmt.Errorf("read: %w", err)
						return
					}
					break
				}
				if n++; e.Seq != n || !bytes.Equal(e.Data, payload(e.ID)) {
					errs <- fmt.Errorf("read entry %d: sequence %d, id %s", n, e.Seq, e.ID)
					return
				}
			}
		}
	})
	writers.Wait()
	stop.Store(true)
	others.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := retainer.Retain(ctx, history.Retention{}); err != nil {
		t.Fatal(err)
	}
	entries := readAll(t, open(t, newStore(t, hn), name), 0)
	if len(entries) != workers*perWorker {
		t.Fatalf("%d entries, want %d", len(entries), workers*perWorker)
	}
	checkLog(t, entries, acks)
}
