package install_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// leaseID is the Lease the manager elects its leader with (cmd/manager, docs/operations.md).
const leaseID = "manager.parley.dev"

// TestChartLeaderElectionNamespace installs the chart with leaderElection.namespace set on a
// real kube-apiserver (envtest authorises with RBAC) and runs two leader-electing replicas as
// the manager's ServiceAccount, with the options the manager uses: one takes the Lease in
// that namespace, and the other takes it over when the first stops. envtest runs no pods, so
// the replicas are controller-runtime managers in this process, each with only the rights
// the chart grants the ServiceAccount.
func TestChartLeaderElectionNamespace(t *testing.T) {
	const leaseNS = "leases"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k := start(t)
	helm := tool(t, "HELM", "helm")
	env := k.helmEnv(t)
	if out, err := k.run(ctx, "", "create", "namespace", leaseNS); err != nil {
		t.Fatalf("kubectl create namespace %s: %v\n%s", leaseNS, err, out)
	}
	runTool(t, env, helm, "install", "parley", chartDir, "--namespace", installNS, "--create-namespace",
		"--set", "leaderElection.namespace="+leaseNS)

	sa := rest.CopyConfig(k.cfg)
	sa.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + installNS + ":parley-controller-manager",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + installNS, "system:authenticated"},
	}
	type replica struct {
		mgr  ctrl.Manager
		stop context.CancelFunc
		// wait returns how the replica's Start ended, once it has.
		wait func() error
	}
	startReplica := func(name string) *replica {
		t.Helper()
		leaseDuration, renewDeadline, retryPeriod := 4*time.Second, 3*time.Second, 500*time.Millisecond
		mgr, err := ctrl.NewManager(sa, ctrl.Options{
			LeaderElection: true, LeaderElectionID: leaseID, LeaderElectionNamespace: leaseNS,
			LeaderElectionReleaseOnCancel: true,
			LeaseDuration:                 &leaseDuration, RenewDeadline: &renewDeadline, RetryPeriod: &retryPeriod,
			Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		})
		if err != nil {
			t.Fatalf("replica %s: %v", name, err)
		}
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(rctx) }()
		r := &replica{mgr: mgr, stop: stop, wait: sync.OnceValue(func() error { return <-done })}
		t.Cleanup(func() {
			stop()
			if err := r.wait(); err != nil {
				t.Logf("replica %s stopped with %v", name, err)
			}
		})
		return r
	}
	elected := func(rs ...*replica) *replica {
		t.Helper()
		cases := make(chan *replica, len(rs))
		for _, r := range rs {
			go func() {
				select {
				case <-r.mgr.Elected():
					cases <- r
				case <-ctx.Done():
				}
			}()
		}
		select {
		case r := <-cases:
			return r
		case <-time.After(time.Minute):
			t.Fatalf("no replica took the Lease %s/%s within a minute: may the ServiceAccount not take it there?", leaseNS, leaseID)
			return nil
		}
	}
	holder := func() string {
		t.Helper()
		out, err := k.run(ctx, "", "-n", leaseNS, "get", "lease", leaseID, "-o", "jsonpath={.spec.holderIdentity}")
		if err != nil {
			t.Fatalf("kubectl get lease %s -n %s: %v\n%s", leaseID, leaseNS, err, out)
		}
		return strings.TrimSpace(out)
	}

	a, b := startReplica("a"), startReplica("b")
	first := elected(a, b)
	other := b
	if first == b {
		other = a
	}
	held := holder()
	if held == "" {
		t.Fatalf("a replica says it leads, but the Lease %s/%s has no holder", leaseNS, leaseID)
	}
	select {
	case <-other.mgr.Elected():
		t.Fatal("both replicas say they lead")
	case <-time.After(2 * time.Second):
	}
	t.Logf("Lease %s/%s held by %s", leaseNS, leaseID, held)

	first.stop()
	if err := first.wait(); err != nil {
		t.Errorf("the leader stopped with %v", err)
	}
	elected(other)
	if now := holder(); now == held || now == "" {
		t.Errorf("after the leader stopped the Lease is held by %q (was %q)", now, held)
	} else {
		t.Logf("the other replica took the Lease over: %s", now)
	}
}
