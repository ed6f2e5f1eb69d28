package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

func conv(name string, phase parleyv1alpha1.ConversationPhase) *parleyv1alpha1.Conversation {
	return &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Status:     parleyv1alpha1.ConversationStatus{Phase: phase},
	}
}

// asleep is an Active Conversation whose agent is suspended while idle.
func asleep(name string) *parleyv1alpha1.Conversation {
	c := conv(name, parleyv1alpha1.ConversationActive)
	c.Status.Conditions = []metav1.Condition{{Type: parleyv1alpha1.ConditionAgentRunning, Status: metav1.ConditionFalse, Reason: parleyv1alpha1.ReasonIdle}}
	c.Status.Agent = &parleyv1alpha1.AgentStatus{Attempt: 1}
	return c
}

func TestConversationCollectorCountsByPhase(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := parleyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		conv("a", parleyv1alpha1.ConversationActive),
		conv("b", parleyv1alpha1.ConversationActive),
		conv("c", parleyv1alpha1.ConversationExpired),
		conv("d", ""), // not reconciled yet
		asleep("e"),
	).Build()

	want := `
# HELP parley_conversations Conversations by phase, read from the manager's cache at scrape time.
# TYPE parley_conversations gauge
parley_conversations{phase="Active"} 3
parley_conversations{phase="Expired"} 1
parley_conversations{phase="Failed"} 0
parley_conversations{phase="Pending"} 1
parley_conversations{phase="Recovering"} 0
parley_conversations{phase="Suspended"} 0
# HELP parley_agents_asleep Agents suspended while they wait for a person (AgentRunning reason Idle), read from the manager's cache at scrape time.
# TYPE parley_agents_asleep gauge
parley_agents_asleep 1
`
	if err := testutil.CollectAndCompare(&ConversationCollector{Reader: reader}, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

func TestConversationCollectorReportsListErrors(t *testing.T) {
	// A scheme without Parley's types makes the list fail, as an unsynced cache would.
	reader := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build()
	if _, err := testutil.CollectAndLint(&ConversationCollector{Reader: reader}); err == nil {
		t.Fatal("a failed list must surface as a scrape error, not as zero conversations")
	}
}
