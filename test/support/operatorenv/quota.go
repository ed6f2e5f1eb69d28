package operatorenv

import (
	"strconv"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CheckpointCount is the ResourceQuota resource that counts Checkpoints.
const CheckpointCount corev1.ResourceName = "count/checkpoints.parley.dev"

// CheckpointQuota creates a ResourceQuota of hard Checkpoints in ns, none used. envtest runs
// no quota controller, so the spec writes the quota's status itself: the API server's quota
// admission then refuses past hard and counts each Checkpoint it admits, but never a deletion
// (SetCheckpointsUsed plays the controller's part there).
func (e *Env) CheckpointQuota(ns string, hard int) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "parley-checkpoints"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{CheckpointCount: resource.MustParse(strconv.Itoa(hard))}},
	}
	gomega.Expect(e.Client.Create(e.Ctx, q)).To(gomega.Succeed())
	e.SetCheckpointsUsed(q, 0)
	return q
}

// RaiseCheckpointQuota makes the quota hard Checkpoints, none used.
func (e *Env) RaiseCheckpointQuota(q *corev1.ResourceQuota, hard int) {
	gomega.Eventually(func(g gomega.Gomega) {
		e.Fetch(q)(g)
		q.Spec.Hard[CheckpointCount] = resource.MustParse(strconv.Itoa(hard))
		g.Expect(e.Client.Update(e.Ctx, q)).To(gomega.Succeed())
	}).Should(gomega.Succeed())
	e.SetCheckpointsUsed(q, 0)
}

// SetCheckpointsUsed writes the quota's status as its controller would with used Checkpoints.
func (e *Env) SetCheckpointsUsed(q *corev1.ResourceQuota, used int) {
	gomega.Eventually(func(g gomega.Gomega) {
		e.Fetch(q)(g)
		q.Status.Hard = q.Spec.Hard.DeepCopy()
		q.Status.Used = corev1.ResourceList{CheckpointCount: resource.MustParse(strconv.Itoa(used))}
		g.Expect(e.Client.Status().Update(e.Ctx, q)).To(gomega.Succeed())
	}).Should(gomega.Succeed())
}

// CheckpointsUsed is what the quota's status counts now.
func (e *Env) CheckpointsUsed(q *corev1.ResourceQuota) int64 {
	e.Fetch(q)(gomega.Default)
	used := q.Status.Used[CheckpointCount]
	return used.Value()
}
