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
	).Build()

	want := `
# HELP parley_conversations Conversations by phase, read from the manager's cache at scrape time.
# TYPE parley_conversations gauge
parley_conversations{phase="Active"} 2
parley_conversations{phase="Expired"} 1
parley_conversations{phase="Failed"} 0
parley_conversations{phase="Pending"} 1
parley_conversations{phase="Recovering"} 0
parley_conversations{phase="Suspended"} 0
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
