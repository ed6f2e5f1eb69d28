package sessionapi

import (
	"fmt"
	"testing"
	"time"
)

func TestKeyedLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	k := newKeyedLimiter(Rate{PerSecond: 10, Burst: 2}, 3, func() time.Time { return now })
	for i := range 2 {
		if k.take("a") != 0 {
			t.Fatalf("token %d of the burst was refused", i+1)
		}
	}
	if d := k.take("a"); d <= 0 || d > 100*time.Millisecond {
		t.Errorf("past the burst: wait %s, want up to 100ms", d)
	}
	if k.take("b") != 0 {
		t.Error("another key shares a's bucket")
	}
	// Bounded: more keys than max keep max.
	for i := range 10 {
		k.take(fmt.Sprint("k", i))
	}
	if n := k.size(); n != 3 {
		t.Errorf("%d buckets kept, want 3", n)
	}
	// Idle ones (full again after Burst/rate = 200ms) expire.
	now = now.Add(time.Second)
	k.take("late")
	if n := k.size(); n != 1 {
		t.Errorf("%d buckets kept after the others idled, want 1", n)
	}
}

// TestKeyedLimiterTakesMoreThanItsBurst: an amount larger than the burst is admitted from a
// full bucket and empties it; the bucket then refills at its rate.
func TestKeyedLimiterTakesMoreThanItsBurst(t *testing.T) {
	now := time.Unix(0, 0)
	k := newKeyedLimiter(Rate{PerSecond: 10, Burst: 100}, 3, func() time.Time { return now })
	if d := k.takeN("a", 250); d != 0 {
		t.Fatalf("250 from a full bucket of 100: wait %s, want none", d)
	}
	if d := k.takeN("a", 50); d != 5*time.Second {
		t.Errorf("50 from the emptied bucket: wait %s, want 5s", d)
	}
	now = now.Add(5 * time.Second)
	if d := k.takeN("a", 50); d != 0 {
		t.Errorf("50 once refilled: wait %s, want none", d)
	}
}

func TestBudget(t *testing.T) {
	b := newBudget(3, 2)
	for range 2 {
		if b.acquire("x", 1) != admitted {
			t.Fatal("within bounds refused")
		}
	}
	if r := b.acquire("x", 1); r != overKey {
		t.Errorf("past the key's bound: %v", r)
	}
	if b.acquire("y", 1) != admitted {
		t.Fatal("y refused")
	}
	if r := b.acquire("z", 1); r != overTotal {
		t.Errorf("past the total: %v", r)
	}
	b.release("x", 2)
	if len(b.byKey) != 1 || b.acquire("z", 1) != admitted {
		t.Error("a release did not free its share")
	}
}
