package blackbox_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// squattedArchiveKeepsTheHistory: a person who may only create Checkpoints in the namespace
// creates one under the name of another conversation's final Checkpoint (<conv>-archive),
// for a conversation of no interest. When that conversation expires with expirationPolicy
// Archive, its live history is kept: it is not emptied on the strength of a Checkpoint that
// does not hold it.
func squattedArchiveKeepsTheHistory(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "archives")
	e.bindRole(ctx, t, ns, "ClusterRole", "parley-checkpoint-editor-role", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "mallory"})
	decoy := historyOnly(ns, "decoy")
	e.conversation(ctx, t, decoy)
	victim := historyOnly(ns, "victim")
	victim.Spec.Lifetime = parleyv1alpha1.LifetimeSpec{
		TTL: &metav1.Duration{Duration: 10 * time.Second}, ExpirationPolicy: parleyv1alpha1.ExpirationPolicyArchive,
	}
	e.conversation(ctx, t, victim)
	agent := e.agentToken(ctx, t, ns)
	if res, body, err := e.do(ctx, http.MethodPost, convPath(ns, victim.Name)+"/messages", agent, appendBody("v", 4, "keep me")); err != nil || res.StatusCode >= 300 {
		t.Fatalf("append: %v %v %s", err, res, body)
	}

	squat := &parleyv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: victim.Name + "-archive"},
		Spec: parleyv1alpha1.CheckpointSpec{
			ConversationRef: parleyv1alpha1.ConversationReference{Name: decoy.Name}, Reason: parleyv1alpha1.CheckpointArchive,
		},
	}
	if err := e.user("mallory").Create(ctx, squat); err != nil {
		t.Fatalf("a Checkpoint editor creates a Checkpoint: %v", err)
	}

	e.eventually(ctx, t, "the victim expires and its history is not archived on the squatted Checkpoint", func() error {
		if err := e.admin.Get(ctx, client.ObjectKeyFromObject(victim), victim); err != nil {
			return err
		}
		c := meta.FindStatusCondition(victim.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
		switch {
		case victim.Status.Phase != parleyv1alpha1.ConversationExpired || c == nil:
			return fmt.Errorf("phase %s", victim.Status.Phase)
		case c.Reason == parleyv1alpha1.ReasonHistoryArchived:
			t.Fatalf("the live history was removed on the strength of Checkpoint %s, of conversation %s: %s", squat.Name, decoy.Name, c.Message)
		case !strings.Contains(c.Message, squat.Name):
			return fmt.Errorf("HistoryAvailable %s: %s", c.Reason, c.Message)
		}
		return nil
	})
	if h := victim.Status.History; h == nil || h.Messages < 4 {
		t.Errorf("the victim's history status after expiry: %+v, want its 4 messages", h)
	}
}
