package engine

import (
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// The cache holds at most its budget, evicts the least recently used first, and skips an
// object larger than the whole budget.
func TestObjectCacheBudget(t *testing.T) {
	c := newObjectCache(10)
	one := []history.Entry{{Seq: 1, ID: "a"}}
	c.put("a", one, 4)
	c.put("b", one, 4)
	if _, ok := c.get("a"); !ok { // a is now the most recent
		t.Fatal("a not cached")
	}
	c.put("c", one, 2) // exactly the budget: nothing evicted
	for _, k := range []string{"a", "b", "c"} {
		if _, ok := c.get(k); !ok {
			t.Fatalf("%s evicted while the cache held exactly its budget", k)
		}
	}
	c.put("d", one, 4) // over: the least recently used (a, after b and c were read) goes
	if _, ok := c.get("a"); ok {
		t.Fatal("least recently used entry kept over the budget")
	}
	if c.used != 10 {
		t.Fatalf("used %d, want 10", c.used)
	}
	c.put("d", []history.Entry{{Seq: 9}}, 4) // already cached: kept as it was
	if got, _ := c.get("d"); got[0].Seq != 1 {
		t.Fatal("a second put replaced a cached entry")
	}
	c.put("huge", one, 11)
	if _, ok := c.get("huge"); ok {
		t.Fatal("an entry larger than the budget was cached")
	}
	c.put("whole", one, 10)
	if _, ok := c.get("whole"); !ok || c.used != 10 {
		t.Fatalf("an entry of exactly the budget was not cached (used %d)", c.used)
	}
}
