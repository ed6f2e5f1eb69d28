package session

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/memory"
)

// TestAppendFoldedHandsOverItsHeadFoldedOrNot: an append hands over the head it left whether
// or not its fold brought the view there; the view stands in for the store only when it did
// (Live.Reached), so a missed fold costs a read of the store, never a stale summary.
func TestAppendFoldedHandsOverItsHeadFoldedOrNot(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs before the append: it holds a view, or writes past it.
		before  func(t *testing.T, live *Live, h history.History)
		reached bool
	}{
		{"the view is held at the head", func(t *testing.T, live *Live, _ history.History) { messageIDs(t, live) }, true},
		{"no view is held", func(*testing.T, *Live, history.History) {}, false},
		{"another write came in between", func(t *testing.T, live *Live, h history.History) {
			messageIDs(t, live)
			if _, err := h.Append(t.Context(), records(t, "other")); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := memory.New(memory.Options{}).Open(t.Context(), "h", history.OpenOptions{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.Append(t.Context(), records(t, "m1")); err != nil {
				t.Fatal(err)
			}
			conv := &parleyv1alpha1.Conversation{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
				Spec:       parleyv1alpha1.ConversationSpec{Context: parleyv1alpha1.ContextSpec{Tokenizer: parleyv1alpha1.TokenizerApproximate}},
				Status:     parleyv1alpha1.ConversationStatus{SessionID: "s1"},
			}
			local := make(chan struct{})
			close(local)
			activity := &Activity{Local: local}
			live, err := (&Sessions{Stores: oneHistory{h}, Activity: activity}).Open(t.Context(), conv, false)
			if err != nil {
				t.Fatal(err)
			}
			tc.before(t, live, h)

			res, err := live.AppendFolded(t.Context(), records(t, "m2"), history.AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			activity.Flush(t.Context())
			_, head, ok := activity.Take(client.ObjectKeyFromObject(conv))
			if !ok || head == nil || *head != res.Head {
				t.Fatalf("handed over %v (taken %v), want the append's head %v", head, ok, res.Head)
			}
			reached, err := live.Reached(*head, func(*journal.View) error { return nil })
			if err != nil || reached != tc.reached {
				t.Errorf("view stands at the head: %v (%v), want %v", reached, err, tc.reached)
			}
		})
	}
}
