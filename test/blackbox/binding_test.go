package blackbox_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/test/support/cluster"
)

// squattedPodGetsNoBinding: someone who may create pods (and nothing of Parley's) creates
// the pod name the next Conversation's agent will get, <conv>-agent-1, running as the agent
// ServiceAccount; the token of that pod must not reach the conversation.
func squattedPodGetsNoBinding(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "squat")
	e.create(ctx, t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "squatter"}})
	e.create(ctx, t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pods"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get"}},
	}})
	e.bindRole(ctx, t, ns, "Role", "pods", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "squatter"})
	squatter := e.bearer(t, e.token(ctx, t, ns, "squatter", time.Hour, "", nil))

	const conv = "victim"
	squat := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: conv + "-agent-1"},
		Spec:       corev1.PodSpec{ServiceAccountName: "agent", Containers: []corev1.Container{{Name: "agent", Image: "registry.example/squatter:1"}}},
	}
	if err := squatter.Create(ctx, squat); err != nil {
		t.Fatalf("the squatter creates pod %s: %v", squat.Name, err)
	}

	victim := withAgent(historyOnly(ns, conv), "agent")
	e.create(ctx, t, victim)
	if err := cluster.WaitFor(ctx, e.admin, victim, func(c *parleyv1alpha1.Conversation) bool {
		if c.Status.Agent != nil && c.Status.Agent.PodName != "" {
			return true
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, parleyv1alpha1.ConditionAgentRunning)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason != parleyv1alpha1.ReasonPodPending
	}); err != nil {
		t.Fatalf("the victim's agent: no pod and no condition: %v (manager log %s)", err, e.logPath)
	}
	if err := e.admin.Get(ctx, client.ObjectKeyFromObject(squat), squat); err != nil {
		t.Fatal(err)
	}
	bound := ""
	if victim.Status.Agent != nil {
		bound = victim.Status.Agent.PodName
	}
	t.Logf("status.agent.podName %q; the squatted pod is controlled by the Conversation: %v", bound, metav1.IsControlledBy(squat, victim))

	token := e.token(ctx, t, ns, "agent", time.Hour, audience, squat)
	var got []string
	for _, r := range []struct{ method, path string }{{http.MethodGet, ""}, {http.MethodGet, "/messages"}, {http.MethodPost, "/messages"}} {
		var body []byte
		if r.method == http.MethodPost {
			body = appendBody("squatter", 1, "written by the squatter")
		}
		res, _, err := e.do(ctx, r.method, convPath(ns, conv)+r.path, token, body)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode < 300 {
			got = append(got, fmt.Sprintf("%s %s: %d", r.method, r.path, res.StatusCode))
		}
	}
	if len(got) > 0 {
		t.Errorf("the squatted pod %s (not created by the manager, bound as status.agent.podName %q) reaches the conversation with its token: %v",
			squat.Name, bound, got)
	}
}
