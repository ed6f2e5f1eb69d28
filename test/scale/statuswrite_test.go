package scale

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/test/support/benchcpu"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/repopath"
)

// statusWriteObjects is how many Conversations the writes go round.
const statusWriteObjects = 400

// BenchmarkStatusWrite measures what one Conversation status write costs the API server and
// etcd (CPU time of their processes per write), written as the controller writes it at an
// expiry (Expired, Ready and the phase change; three conditions as in a history-only
// Conversation), by 16 concurrent writers: as a merge patch with an optimistic lock (what the
// controllers sent before cc69827) and as an update of the status subresource conditional on
// the resourceVersion (controller.WriteStatus). Status writes are most of the API server's work
// in the scale benchmark's expiry window and in the Session API benchmark.
//
//	KUBEBUILDER_ASSETS=$PWD/bin/k8s/envtest go test ./test/scale -run '^$' -bench StatusWrite -benchtime 2000x -count 3
func BenchmarkStatusWrite(b *testing.B) {
	kube, stop, err := kubeenv.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	root, err := repopath.Root()
	if err != nil {
		b.Fatal(err)
	}
	if err := kubeenv.InstallCRDs(kube, root); err != nil {
		b.Fatal(err)
	}
	c, _, err := kubeenv.NewClient(kube)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ns := "statuswrite"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	objs := make([]*parleyv1alpha1.Conversation, statusWriteObjects)
	for i := range objs {
		if objs[i], err = createWithStatus(ctx, c, ns, i); err != nil {
			b.Fatal(err)
		}
	}
	apiserver, etcd := benchcpu.ChildPID("kube-apiserver"), benchcpu.ChildPID("etcd")

	writes := map[string]func(before, after *parleyv1alpha1.Conversation) error{
		"merge-patch-with-lock": func(before, after *parleyv1alpha1.Conversation) error {
			return c.Status().Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		},
		"update": func(_, after *parleyv1alpha1.Conversation) error {
			return c.Status().Update(ctx, after)
		},
	}
	for _, name := range []string{"merge-patch-with-lock", "update"} {
		write := writes[name]
		b.Run(name, func(b *testing.B) {
			var next atomic.Int64
			a0, e0 := cpuSeconds(apiserver), cpuSeconds(etcd)
			b.SetParallelism(max(1, 16/goruntime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					// Each writer takes the next object; with 400 objects two writers never share one.
					o := objs[int(next.Add(1))%len(objs)]
					if err := flipExpiry(o, write); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric((cpuSeconds(apiserver)-a0)*1000/float64(b.N), "apiserver-cpu-ms/op")
			b.ReportMetric((cpuSeconds(etcd)-e0)*1000/float64(b.N), "etcd-cpu-ms/op")
		})
	}
}

// createWithStatus creates Conversation i with the status a history-only Conversation has
// while it lives.
func createWithStatus(ctx context.Context, c client.Client, ns string, i int) (*parleyv1alpha1.Conversation, error) {
	o := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("conv-%05d", i), Namespace: ns},
		Spec: parleyv1alpha1.ConversationSpec{
			SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: systemPrompt},
			History:      parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}},
			Lifetime:     parleyv1alpha1.LifetimeSpec{TTL: &metav1.Duration{Duration: time.Hour}},
		},
	}
	if err := c.Create(ctx, o); err != nil {
		return nil, err
	}
	before := o.DeepCopy()
	at := metav1.NewTime(o.CreationTimestamp.Add(time.Hour))
	loc := "configmap://" + ns + "/" + o.Name + "-history"
	o.Status = parleyv1alpha1.ConversationStatus{
		ObservedGeneration: 1, SessionID: "e8cde0d6-9dcc-5944-8a48-c395b0237148", Phase: parleyv1alpha1.ConversationActive,
		History:   &parleyv1alpha1.HistoryStatus{Bytes: 259, Epoch: 1, Sequence: 2, Location: loc},
		Context:   &parleyv1alpha1.ContextStatus{Tokens: 37},
		ExpiresAt: &at,
	}
	for _, cond := range []metav1.Condition{
		{Type: parleyv1alpha1.ConditionExpired, Status: metav1.ConditionFalse, Reason: parleyv1alpha1.ReasonNotExpired, Message: "the session expires at " + at.UTC().Format(time.RFC3339) + " unless extended"},
		{Type: parleyv1alpha1.ConditionHistoryAvailable, Status: metav1.ConditionTrue, Reason: parleyv1alpha1.ReasonHistoryReady, Message: "history at " + loc + ": 0 messages"},
		{Type: parleyv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: parleyv1alpha1.ReasonActive, Message: "the session is live and its history available"},
	} {
		cond.ObservedGeneration = 1
		meta.SetStatusCondition(&o.Status.Conditions, cond)
	}
	err := c.Status().Patch(ctx, o, client.MergeFrom(before))
	o.ManagedFields = nil // as the manager's cache holds it
	return o, err
}

// flipExpiry writes the status change of an expiry, or of its undoing, so every write changes
// the same fields.
func flipExpiry(o *parleyv1alpha1.Conversation, write func(before, after *parleyv1alpha1.Conversation) error) error {
	before := o.DeepCopy()
	expired := !meta.IsStatusConditionTrue(o.Status.Conditions, parleyv1alpha1.ConditionExpired)
	if expired {
		meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: parleyv1alpha1.ConditionExpired, Status: metav1.ConditionTrue, Reason: parleyv1alpha1.ReasonTTLExceeded, Message: "ttl 1h0m0s reached", ObservedGeneration: 1})
		meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: parleyv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: parleyv1alpha1.ReasonExpired, Message: "the session expired; create a new Conversation or fork this one from a Checkpoint to continue", ObservedGeneration: 1})
		o.Status.Phase = parleyv1alpha1.ConversationExpired
	} else {
		meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: parleyv1alpha1.ConditionExpired, Status: metav1.ConditionFalse, Reason: parleyv1alpha1.ReasonNotExpired, Message: "not expired", ObservedGeneration: 1})
		meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: parleyv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: parleyv1alpha1.ReasonActive, Message: "the session is live and its history available", ObservedGeneration: 1})
		o.Status.Phase = parleyv1alpha1.ConversationActive
	}
	err := write(before, o)
	o.ManagedFields = nil
	return err
}
