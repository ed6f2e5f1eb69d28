package sessionapi

import "testing"

func TestAnswerCacheKeepsWithinItsBytes(t *testing.T) {
	c := newAnswerCache(10)
	key := func(route string) answerKey { return answerKey{uid: "u", route: route} }
	c.put(key("a"), "a", 4)
	c.put(key("b"), "b", 4)
	if _, ok := c.get(key("a")); !ok { // a is now the most recently used
		t.Fatal("a was not kept")
	}
	c.put(key("c"), "c", 4) // 12 > 10: the least recently used (b) goes
	if _, ok := c.get(key("b")); ok {
		t.Error("b was kept past the bound")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.get(key(k)); !ok {
			t.Errorf("%s was not kept", k)
		}
	}
	c.put(key("huge"), "huge", 11) // larger than the bound: not kept, nothing evicted
	if _, ok := c.get(key("huge")); ok {
		t.Error("an answer larger than the bound was kept")
	}
	if got := c.bytes(); got != 8 {
		t.Errorf("the cache holds %d bytes, want 8", got)
	}
	c.put(key("whole"), "whole", 10) // the whole bound: everything else goes
	if _, ok := c.get(key("whole")); !ok || c.bytes() != 10 {
		t.Errorf("an answer of the whole bound: kept %v, the cache holds %d bytes, want 10", ok, c.bytes())
	}
	if off := newAnswerCache(0); func() bool { off.put(key("a"), "a", 1); _, ok := off.get(key("a")); return ok }() {
		t.Error("a cache of no bytes kept an answer")
	}
}
