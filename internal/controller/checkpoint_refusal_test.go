package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// quotaRefusal is the API server's answer to a Checkpoint past a full ResourceQuota.
func quotaRefusal(name string) error {
	return fmt.Errorf("creating Scheduled Checkpoint ns/%s: %w", name, apierrors.NewForbidden(
		schema.GroupResource{Group: "parley.dev", Resource: "checkpoints"}, name,
		fmt.Errorf("exceeded quota: parley-checkpoints, requested: count/checkpoints.parley.dev=1, used: count/checkpoints.parley.dev=3, limited: count/checkpoints.parley.dev=3")))
}

// At a full quota nothing new is made: the Checkpoints past keep of those that exist still go
// (that is what makes room), but none of the kept ones goes for a Checkpoint that was refused.
func TestPruneAfterARefusedCheckpoint(t *testing.T) {
	policy := func(keep int32) *parleyv1alpha1.Conversation {
		conv := testConv()
		conv.Spec.Checkpoints = &parleyv1alpha1.CheckpointPolicy{EveryTurns: ptrTo(int32(1)), Keep: ptrTo(keep)}
		return conv
	}
	three := tenTurnCheckpoints()[:3]
	existing := make([]parleyv1alpha1.Checkpoint, 0, len(three))
	for _, c := range three {
		existing = append(existing, c.object())
	}
	for name, tc := range map[string]struct {
		keep    int32
		created int
		want    []string
	}{
		"created: the oldest goes for the new one": {keep: 3, created: 1, want: []string{"c-turn-1"}},
		"refused at keep: none goes":               {keep: 3, created: 0, want: nil},
		"refused past keep: the excess goes":       {keep: 2, created: 0, want: []string{"c-turn-1"}},
		"created past keep":                        {keep: 2, created: 1, want: []string{"c-turn-1", "c-turn-2"}},
	} {
		t.Run(name, func(t *testing.T) {
			plan := decideCheckpoints(policy(tc.keep), existing, created.Add(10*time.Minute), 4, 8)
			if len(plan.create) != 1 {
				t.Fatalf("create %v, want the turn-4 Checkpoint", plan.create)
			}
			if got := plan.pruneAfter(tc.created); !slices.Equal(got, tc.want) {
				t.Errorf("prune %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRefusalOf(t *testing.T) {
	ref := refusalOf("c-turn-4", parleyv1alpha1.CheckpointScheduled, quotaRefusal("c-turn-4"))
	if ref == nil {
		t.Fatal("a 403 Forbidden is a refusal")
	}
	want := `checkpoints.parley.dev "c-turn-4" is forbidden: exceeded quota: parley-checkpoints, requested: count/checkpoints.parley.dev=1, used: count/checkpoints.parley.dev=3, limited: count/checkpoints.parley.dev=3`
	if ref.why != want {
		t.Errorf("why %q, want the API server's message %q", ref.why, want)
	}
	for _, err := range []error{nil, fmt.Errorf("x: %w", apierrors.NewServiceUnavailable("etcd")), apierrors.NewAlreadyExists(schema.GroupResource{}, "x")} {
		if refusalOf("x", parleyv1alpha1.CheckpointScheduled, err) != nil {
			t.Errorf("%v is no refusal", err)
		}
	}
}

// A refusal is reported once per streak: Degraded says so, and the Warning event comes only
// when Degraded did not already; a reconcile that read the history without a refusal clears it.
func TestSettleCheckpointRefusal(t *testing.T) {
	refusal := refusalOf("c-turn-4", parleyv1alpha1.CheckpointScheduled, quotaRefusal("c-turn-4"))
	conv := testConv()
	settle := func(refused bool, summary bool) *conversationScope {
		s := newConversationScope(conv, created)
		if refused {
			s.checkpointRefused = refusal
		}
		if summary {
			s.summary = &historySummary{}
		}
		settleCheckpointRefusal(s)
		conv = s.withStatus()
		return s
	}
	warnings := func(s *conversationScope) int {
		n := 0
		for _, e := range s.events {
			if e.warning && e.reason == parleyv1alpha1.EventCheckpointRefused {
				n++
			}
		}
		return n
	}
	degraded := func() string {
		c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionDegraded)
		if c == nil || c.Status != metav1.ConditionTrue {
			return ""
		}
		return c.Reason
	}

	if s := settle(true, true); warnings(s) != 1 || degraded() != parleyv1alpha1.ReasonCheckpointRefused {
		t.Fatalf("first refusal: %d warnings, Degraded %q; want 1 and CheckpointRefused", warnings(s), degraded())
	}
	if s := settle(true, true); warnings(s) != 0 || degraded() != parleyv1alpha1.ReasonCheckpointRefused {
		t.Fatalf("second refusal: %d warnings, Degraded %q; want none and CheckpointRefused", warnings(s), degraded())
	}
	if settle(false, false); degraded() != parleyv1alpha1.ReasonCheckpointRefused {
		t.Fatalf("a reconcile that did not read the history cleared Degraded")
	}
	if settle(false, true); degraded() != "" {
		t.Fatalf("Degraded %q after a reconcile without a refusal, want it cleared", degraded())
	}
	if s := settle(true, true); warnings(s) != 1 {
		t.Fatalf("a new streak: %d warnings, want 1", warnings(s))
	}

	// Another reason on Degraded stays; the event is then what says it.
	conv = testConv()
	meta.SetStatusCondition(&conv.Status.Conditions, metav1.Condition{
		Type: parleyv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: parleyv1alpha1.ReasonSessionIDMismatch,
	})
	if s := settle(true, true); warnings(s) != 1 || degraded() != parleyv1alpha1.ReasonSessionIDMismatch {
		t.Fatalf("%d warnings, Degraded %q; want 1 and SessionIDMismatch kept", warnings(s), degraded())
	}
}
