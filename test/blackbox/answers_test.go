package blackbox_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// answersHeldAreBounded: one token opens many reads of a large page and never reads their
// answers. Each answer waits, encoded, for its client until the write times out; the manager
// must not hold them all (one identity may have 128 requests in flight, each answer 16 MiB).
func answersHeldAreBounded(ctx context.Context, t *testing.T, e *env) {
	const readers = 64
	ns, path, reader := e.bigHistory(ctx, t, "answers")
	// Another identity of the namespace, which the reader's answers must not crowd out.
	e.create(ctx, t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}})
	e.bindRole(ctx, t, ns, "ClusterRole", agentRole, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "other"})
	other := e.token(ctx, t, ns, "other", time.Hour, audience, nil)
	e.resetPeakRSS(t)
	before, err := e.proc.PeakRSS()
	if err != nil {
		t.Skipf("the manager's peak RSS is unreadable: %v", err)
	}
	for range readers {
		conn := e.neverReading(ctx, t)
		defer func() { _ = conn.Close() }()
		if _, err := fmt.Fprintf(conn, "GET %s/messages?limit=1000 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", path, reader); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Second) // the answers are encoded and wait to be written
	e.mustBeAlive(t)
	after, err := e.proc.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the manager's peak RSS: %d MiB before, %d MiB with %d answers nobody reads", before>>20, after>>20, readers)
	// The replica holds at most 128 MiB of answers (32 MiB for one identity).
	if grew := after - before; grew > 256<<20 {
		t.Errorf("the manager grew by %d MiB holding answers nobody reads; the answer budget is 128 MiB", grew>>20)
	}
	res, _, err := e.do(ctx, http.MethodGet, path+"/messages?limit=1000", other, nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("another identity's read while the answers wait: %v %v, want 200", err, res)
	}
}
