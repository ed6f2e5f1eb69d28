package history_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/history"
)

// Whatever many readers ask for at once, what they hold together never passes the budget, and
// every one of them gets its part in the end.
func TestDecodeBudgetBoundsWhatIsHeldAtOnce(t *testing.T) {
	const size = 100
	b := history.NewDecodeBudget(size, time.Minute)
	var held, most atomic.Int64
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			n := int64(10 + i%7*15) // 10 to 100
			release, err := b.Acquire(context.Background(), n)
			if err != nil {
				t.Error(err)
				return
			}
			now := held.Add(n)
			for m := most.Load(); now > m; m = most.Load() {
				if most.CompareAndSwap(m, now) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			held.Add(-n)
			release()
		})
	}
	wg.Wait()
	if m := most.Load(); m > size {
		t.Fatalf("readers held %d bytes at once, the budget is %d", m, size)
	}
	if st := b.Stats(); st.InUse != 0 || st.Waits == 0 || st.Refusals != 0 {
		t.Fatalf("after the readers: %+v, want nothing in use, some waits, no refusal", st)
	}
}

func TestDecodeBudgetWaits(t *testing.T) {
	ctx := context.Background()
	t.Run("a read that does not fit waits for the bytes given back", func(t *testing.T) {
		b := history.NewDecodeBudget(100, time.Minute)
		first, _ := b.Acquire(ctx, 80)
		got := make(chan error, 1)
		go func() {
			release, err := b.Acquire(ctx, 50)
			if err == nil {
				release()
			}
			got <- err
		}()
		select {
		case err := <-got:
			t.Fatalf("50 bytes granted while 80 of 100 are held: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		first()
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("smaller reads that fit go ahead of a larger one waiting", func(t *testing.T) {
		b := history.NewDecodeBudget(100, time.Minute)
		first, _ := b.Acquire(ctx, 60)
		defer first()
		go func() {
			if release, err := b.Acquire(ctx, 90); err == nil {
				release()
			}
		}()
		waitFor(t, func() bool { return b.Stats().Waits == 1 })
		small, err := b.Acquire(ctx, 30)
		if err != nil {
			t.Fatalf("30 bytes with 40 free behind a waiting read of 90: %v", err)
		}
		small()
	})
	t.Run("a read larger than the budget gets all of it once it is free", func(t *testing.T) {
		b := history.NewDecodeBudget(100, time.Minute)
		release, err := b.Acquire(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if st := b.Stats(); st.InUse != 100 {
			t.Fatalf("in use %d, want the whole budget", st.InUse)
		}
		release()
		release() // twice is once
		if st := b.Stats(); st.InUse != 0 {
			t.Fatalf("in use %d after release", st.InUse)
		}
	})
}

func TestDecodeBudgetRefuses(t *testing.T) {
	ctx := context.Background()
	t.Run("past the longest wait", func(t *testing.T) {
		b := history.NewDecodeBudget(100, 20*time.Millisecond)
		hold, _ := b.Acquire(ctx, 100)
		defer hold()
		if _, err := b.Acquire(ctx, 1); !errors.Is(err, history.ErrBusy) || !history.IsRetryable(err) {
			t.Fatalf("a read past the wait: %v, want a retryable ErrBusy", err)
		}
		if st := b.Stats(); st.InUse != 100 || st.Refusals != 1 {
			t.Fatalf("after a refusal: %+v, want only the holder's 100 bytes in use and one refusal", st)
		}
	})
	t.Run("when the reader's context ends", func(t *testing.T) {
		b := history.NewDecodeBudget(100, time.Minute)
		hold, _ := b.Acquire(ctx, 100)
		cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if _, err := b.Acquire(cctx, 1); !errors.Is(err, history.ErrBusy) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a read whose context ended: %v, want ErrBusy and the context's error", err)
		}
		hold()
		if release, err := b.Acquire(ctx, 100); err != nil {
			t.Fatalf("the whole budget after a refused waiter left: %v", err)
		} else {
			release()
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
	}
}
