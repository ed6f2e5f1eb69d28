package controller

import "testing"

func TestNamespaceGateBoundsEachNamespaceAlone(t *testing.T) {
	g := newNamespaceGate(2)
	leaveA1, ok1 := g.tryEnter("a")
	_, ok2 := g.tryEnter("a")
	if !ok1 || !ok2 {
		t.Fatal("the first two of namespace a are refused")
	}
	if _, ok := g.tryEnter("a"); ok {
		t.Fatal("a third of namespace a goes in past the limit of 2")
	}
	if _, ok := g.tryEnter("b"); !ok {
		t.Fatal("namespace b is refused while namespace a is full")
	}
	leaveA1()
	leaveA1() // a second call gives back nothing more
	if _, ok := g.tryEnter("a"); !ok {
		t.Fatal("namespace a is refused after one of its slots was given back")
	}
	if _, ok := g.tryEnter("a"); ok {
		t.Fatal("a leave called twice gave back two slots")
	}
}

func TestHistoryIOPerNamespace(t *testing.T) {
	for _, c := range []struct{ workers, flag, want int }{
		{16, 0, 4}, {4, 0, 1}, {1, 0, 1}, {0, 0, 1}, {16, 10, 10},
	} {
		if got := HistoryIOPerNamespace(c.workers, c.flag); got != c.want {
			t.Errorf("HistoryIOPerNamespace(%d, %d) = %d, want %d", c.workers, c.flag, got, c.want)
		}
	}
}
