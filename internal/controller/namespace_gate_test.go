package controller

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

func TestNamespaceGateBoundsEachNamespaceAlone(t *testing.T) {
	g := NewNamespaceGate(2)
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

func TestHistoryIOIsGatedForObjectStoresOnly(t *testing.T) {
	gate := NewNamespaceGate(1)
	inS3 := testConv(func(c *parleyv1alpha1.Conversation) {
		c.Spec.History = parleyv1alpha1.HistorySpec{ObjectStore: &parleyv1alpha1.ObjectStoreHistory{Endpoint: "https://s3.example"}}
	})
	leave, err := enterHistoryIO(gate, inS3)
	if err != nil {
		t.Fatalf("the namespace's first S3 history I/O: %v", err)
	}
	if _, err := enterHistoryIO(gate, inS3); !errors.Is(err, errNamespaceBusy) {
		t.Fatalf("a second S3 history I/O of the namespace past its limit of 1: %v, want errNamespaceBusy", err)
	}
	if _, err := enterHistoryIO(gate, testConv()); err != nil {
		t.Fatalf("a ConfigMap history of the full namespace: %v, want no gate", err)
	}
	leave()
	if _, err := enterHistoryIO(gate, inS3); err != nil {
		t.Fatalf("after the slot was given back: %v", err)
	}
}

func TestHistoryReadDeferredWhenTheNamespaceIsBusy(t *testing.T) {
	s := newConversationScope(testConv(), created)
	s.setCondition(parleyv1alpha1.ConditionHistoryAvailable, metav1.ConditionTrue, parleyv1alpha1.ReasonHistoryReady, "")
	(&ConversationReconciler{}).historyFailed(s, errNamespaceBusy)
	if c := s.condition(parleyv1alpha1.ConditionHistoryAvailable); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("HistoryAvailable %+v, want it left True", c)
	}
	if s.retryErr != nil || s.requeue != busyHistoryRecheck {
		t.Fatalf("retry error %v, requeue %v: want no backoff and a look again after %v", s.retryErr, s.requeue, busyHistoryRecheck)
	}
	if len(s.events) != 1 || s.events[0].reason != parleyv1alpha1.EventHistoryReadDeferred || !s.events[0].warning ||
		!strings.Contains(s.events[0].message, "--max-history-io-per-namespace") {
		t.Fatalf("events %+v, want one Warning %s naming the flag", s.events, parleyv1alpha1.EventHistoryReadDeferred)
	}
}
