package scale

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/sessionapi"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/managerproc"
	"github.com/parley-dev/parley/test/support/metricstext"
	"github.com/parley-dev/parley/test/support/podwatch"
)

const (
	// wakeSuspendAfter is each agent's idle.suspendAfter: short, so that all fall asleep soon
	// after their answer.
	wakeSuspendAfter = time.Second
	// holdAsleep is how long the harness watches for pods once all agents sleep.
	holdAsleep = 10 * time.Second
	// settleAfter lets the manager finish what a phase set off before its memory is read.
	settleAfter = 5 * time.Second
)

// BenchmarkWakeAtOnce puts the agents of PARLEY_SCALE_ASLEEP (1,000) Conversations to sleep
// (spec.agent.idle) on envtest, against the real manager binary with its Session API, then
// wakes PARLEY_SCALE_WAKE (100) of them at once: that many people each append one user
// message through the Session API, concurrently. It reports:
//
//   - the pods while all sleep: listed, and created during a hold of holdAsleep (0 and 0);
//   - each wake, from the Session API's acknowledgement of its message to the new pod's
//     arrival on the harness's watch (no kubelet: it stops at the pod's creation): p50, p99,
//     max, and the time from the burst's start to the last pod;
//   - fairness: how far a wake's place among the pods' arrivals strays from its place among
//     the acknowledgements, and the first tenth of the acknowledged against the last;
//   - the API server's requests per wake, and the manager's RSS idle, with every agent asleep
//     and after the wakes.
//
// It runs once whatever b.N is and only with PARLEY_SCALE=1: `make bench-wake-scale`.
func BenchmarkWakeAtOnce(b *testing.B) {
	s := loadSettings(b)
	if s.wake > s.asleep {
		b.Fatalf("PARLEY_SCALE_WAKE=%d is more than PARLEY_SCALE_ASLEEP=%d", s.wake, s.asleep)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port, err := managerproc.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	apiURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	bn, stop := setUp(ctx, b, s, []string{
		"--session-api-bind-address=127.0.0.1:" + strconv.Itoa(port), "--session-api-insecure", "--agent-api-url=" + apiURL,
		// The people all come from this process's address, where in a cluster each has their
		// own (or the API server authenticates them, through aggregation): the bound on the
		// tokens one address may bring would throttle the harness, not the wakes.
		"--session-api-source-review-rate=" + strconv.Itoa(10*s.wake),
	})
	defer stop()
	go bn.sampleRSS(ctx)
	go bn.scrapeLoop(ctx)

	kube, err := kubernetes.NewForConfig(bn.kube)
	if err != nil {
		b.Fatal(err)
	}
	people, err := bn.people(ctx, kube, apiURL, s.wake)
	if err != nil {
		b.Fatal(err)
	}
	podAPI := kube.CoreV1().Pods(namespace)
	pods, err := podwatch.Start(ctx, podAPI)
	if err != nil {
		b.Fatal(err)
	}
	defer pods.Stop()
	asleep, err := watchAsleep(ctx, bn)
	if err != nil {
		b.Fatal(err)
	}
	idle := bn.snapshot(ctx)
	b.Logf("manager idle: RSS %.1f MiB", float64(idle.mem.rss)/mib)

	// Every agent starts, answers a first message and falls asleep.
	t0 := time.Now()
	if err := bn.putToSleep(ctx, people); err != nil {
		b.Fatal(err)
	}
	b.Logf("created %d Conversations with agents and appended their first turn in %.1f s", s.asleep, time.Since(t0).Seconds())
	if err := asleep.waitFor(ctx, s.asleep, s.timeout, bn.mgr); err != nil {
		b.Fatal(err)
	}
	b.Logf("all %d agents asleep %.1f s after the first create", s.asleep, time.Since(t0).Seconds())
	time.Sleep(settleAfter)
	listed, err := countPods(ctx, podAPI)
	if err != nil {
		b.Fatal(err)
	}
	arrivedBefore := pods.Arrived()
	time.Sleep(holdAsleep)
	createdInHold := pods.Arrived() - arrivedBefore
	asleepSnap := bn.snapshot(ctx)
	b.Logf("pods while asleep: %d listed, %d created over a %s hold", listed, createdInHold, holdAsleep)
	if listed != 0 || createdInHold != 0 {
		b.Errorf("agents asleep hold pods: %d listed, %d created", listed, createdInHold)
	}
	b.Logf("manager with %d asleep: RSS %.1f MiB, peak so far (VmHWM) %.1f MiB; Go heap in use %.1f MiB",
		s.asleep, float64(asleepSnap.mem.rss)/mib, float64(max(asleepSnap.mem.hwm, bn.maxRSS.Load()))/mib,
		asleepSnap.mgr.Sum("go_memstats_heap_inuse_bytes")/mib)
	b.Logf("    reconciles while they fell asleep: %s", reconcileSummary(idle, asleepSnap, s.asleep, asleepSnap.at.Sub(idle.at).Seconds()))

	// The burst.
	woken := wakeAtOnce(ctx, b, people, pods, s.asleep, s.wake)
	time.Sleep(settleAfter)
	end := bn.snapshot(ctx)
	podsAfter, err := countPods(ctx, podAPI)
	if err != nil {
		b.Fatal(err)
	}
	stillAsleep := asleep.count()
	bn.reportWakes(woken, asleepSnap, end)
	b.Logf("after the wakes: %d pods (want %d), %d agents still asleep (want %d)", podsAfter, s.wake, stillAsleep, s.asleep-s.wake)
	if podsAfter != s.wake || stillAsleep != s.asleep-s.wake {
		b.Errorf("the wakes started %d pods for %d messages and left %d of %d asleep", podsAfter, s.wake, stillAsleep, s.asleep-s.wake)
	}
	b.Logf("manager RSS: idle %.1f MiB, %d asleep %.1f MiB, after %d woken %.1f MiB; peak over the run (VmHWM) %.1f MiB; Go heap in use %.1f MiB",
		float64(idle.mem.rss)/mib, s.asleep, float64(asleepSnap.mem.rss)/mib, s.wake, float64(end.mem.rss)/mib,
		float64(max(end.mem.hwm, bn.maxRSS.Load()))/mib, end.mgr.Sum("go_memstats_heap_inuse_bytes")/mib)
	b.ReportMetric(float64(listed+createdInHold), "pods-asleep")
	b.ReportMetric(float64(idle.mem.rss)/mib, "RSS-idle-MiB")
	b.ReportMetric(float64(asleepSnap.mem.rss)/mib, "RSS-asleep-MiB")
	b.ReportMetric(float64(end.mem.rss)/mib, "RSS-woken-MiB")
	b.Logf("load average at end %s", loadAvg())
}

// person is one user of the Session API, with their own token.
type person struct {
	name string
	api  *parleyclient.Client
}

// people creates n ServiceAccounts in the namespace that may read and write its histories
// (one Role bound to the namespace's ServiceAccounts group) and a Session API client for each,
// which does not retry: a refused append is counted, then sent again by the harness.
func (bn *bench) people(ctx context.Context, kube kubernetes.Interface, apiURL string, n int) ([]person, error) {
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "person"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"parley.dev"}, Resources: []string{"conversations/" + sessionapi.HistorySubresource}, Verbs: []string{"get", "create"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "person"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "person"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + namespace}},
	}
	if err := bn.c.Create(ctx, role); err != nil {
		return nil, err
	}
	if err := bn.c.Create(ctx, binding); err != nil {
		return nil, err
	}
	if err := bn.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "default"}}); err != nil {
		return nil, err
	}
	out := make([]person, n)
	for i := range out {
		name := fmt.Sprintf("person-%03d", i)
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		if err := bn.c.Create(ctx, sa); err != nil {
			return nil, err
		}
		tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
			&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{wire.Audience}}}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("minting the token of %s: %w", name, err)
		}
		api, err := parleyclient.New(parleyclient.Options{URL: apiURL, Token: tr.Status.Token, Retries: -1})
		if err != nil {
			return nil, err
		}
		out[i] = person{name: name, api: api}
	}
	return out, nil
}

func sleeperName(i int) string { return fmt.Sprintf("sleeper-%04d", i) }

// putToSleep creates the Conversations, each with an agent that sleeps wakeSuspendAfter after
// it answered, and appends its first turn (a person's message and the agent's answer) as soon
// as its history exists, with s.workers workers. The pods are never reported running: a
// Pending pod is stopped like a running one.
func (bn *bench) putToSleep(ctx context.Context, people []person) error {
	return inParallel(ctx, bn.s.asleep, bn.s.workers, func(ctx context.Context, i int) error {
		return bn.sleeper(ctx, i, people[i%len(people)])
	})
}

func (bn *bench) sleeper(ctx context.Context, i int, p person) error {
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sleeperName(i)},
		Spec: parleyv1alpha1.ConversationSpec{
			SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: systemPrompt},
			History:      parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}},
			Agent: &parleyv1alpha1.AgentSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "example.com/agent:1"}}}},
				Idle:     &parleyv1alpha1.IdleSpec{SuspendAfter: metav1.Duration{Duration: wakeSuspendAfter}},
			},
		},
	}
	if err := bn.c.Create(ctx, conv); err != nil {
		return fmt.Errorf("creating %s: %w", conv.Name, err)
	}
	turn := []conversation.Message{
		textMessage("u1", conversation.RoleUser, "Where are the release notes?"),
		textMessage("a1", conversation.RoleAssistant, "In docs/releases; the latest is at the top."),
	}
	return appendUntil(ctx, p, conv.Name, turn, time.Now().Add(2*time.Minute), nil)
}

func textMessage(id string, role conversation.Role, text string) conversation.Message {
	return conversation.Message{ID: id, Role: role, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: text}}}
}

// appendUntil appends msgs, sending them again after a refusal (the history not created yet,
// a limit) until deadline; refused counts the refusals when not nil.
func appendUntil(ctx context.Context, p person, name string, msgs []conversation.Message, deadline time.Time, refused *refusals) error {
	for {
		_, err := p.api.Append(ctx, namespace, name, msgs)
		if err == nil {
			return nil
		}
		if refused != nil {
			refused.note(err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("appending to %s as %s: %w", name, p.name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// refusals counts refused appends by HTTP status (0: no answer).
type refusals struct {
	mu       sync.Mutex
	byStatus map[int]int
}

func (r *refusals) note(err error) {
	status := 0
	if p, ok := errors.AsType[*wire.Problem](err); ok {
		status = p.Status
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byStatus == nil {
		r.byStatus = map[int]int{}
	}
	r.byStatus[status]++
}

func (r *refusals) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.byStatus) == 0 {
		return "none"
	}
	codes := slices.Sorted(maps.Keys(r.byStatus))
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d × %d", r.byStatus[c], c)
	}
	return strings.Join(parts, ", ")
}

// wake is one message of the burst and what became of it.
type wake struct {
	conv                 string
	sent, acked, arrived time.Time
}

func (w wake) latency() time.Duration { return w.arrived.Sub(w.acked) }

// woken is the burst: its start and its wakes.
type woken struct {
	start   time.Time
	wakes   []wake
	refused *refusals
}

// wakeAtOnce wakes n of the asleep Conversations, spread over them, person i waking the i-th:
// all goroutines wait at one gate, then each appends its message and waits for the pod.
func wakeAtOnce(ctx context.Context, b *testing.B, people []person, pods *podwatch.Watch, asleep, n int) woken {
	gate := make(chan struct{})
	out := woken{wakes: make([]wake, n), refused: &refusals{}}
	var failed atomic.Value
	var wg sync.WaitGroup
	for i := range n {
		name := sleeperName(i * asleep / n)
		arrival := pods.Expect(agentpod.PodName(name, 2))
		wg.Go(func() {
			<-gate
			w := wake{conv: name, sent: time.Now()}
			msg := textMessage("u2", conversation.RoleUser, "And the ones before?")
			if err := appendUntil(ctx, people[i], name, []conversation.Message{msg}, time.Now().Add(time.Minute), out.refused); err != nil {
				failed.Store(err)
				return
			}
			w.acked = time.Now()
			select {
			case w.arrived = <-arrival:
			case <-time.After(2 * time.Minute):
				failed.Store(fmt.Errorf("%s: no pod of attempt 2 two minutes after the message", name))
				return
			case <-ctx.Done():
				return
			}
			out.wakes[i] = w
		})
	}
	out.start = time.Now()
	close(gate)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return out
}

// reportWakes logs the burst's latencies, its fairness and its cost to the API server.
func (bn *bench) reportWakes(w woken, before, after snapshot) {
	b, n := bn.b, len(w.wakes)
	lat := make([]time.Duration, n)
	appendLat := make([]time.Duration, n)
	var last time.Time
	for i, wk := range w.wakes {
		lat[i], appendLat[i] = wk.latency(), wk.acked.Sub(wk.sent)
		if wk.arrived.After(last) {
			last = wk.arrived
		}
	}
	p50, p99, pmax := percentiles(slices.Clone(lat))
	a50, a99, amax := percentiles(appendLat)
	total := last.Sub(w.start)
	b.Logf("%d woken at once: acknowledged → pod created p50 %s, p99 %s, max %s; all %d pods %s after the burst began",
		n, p50, p99, pmax, n, total.Round(time.Millisecond))
	b.Logf("    the appends (sent → acknowledged): p50 %s, p99 %s, max %s; refused and sent again: %s", a50, a99, amax, w.refused)
	displacement, firstTenth, lastTenth := fairness(w.wakes)
	b.Logf("    fairness: a pod's place in the order of arrivals strays at most %d places from its message's among the acknowledgements; "+
		"mean latency of the first tenth acknowledged %s, of the last tenth %s", displacement, firstTenth.Round(time.Millisecond), lastTenth.Round(time.Millisecond))
	b.Logf("    each pod's arrival after the burst began, in the order the messages were acknowledged, in tenths of a second: %s", arrivalsByAck(w))
	bs := after.mgr.Histogram("parley_agent_wake_seconds")
	prev := before.mgr.Histogram("parley_agent_wake_seconds")
	for i := range bs {
		if i < len(prev) {
			bs[i].Count -= prev[i].Count
		}
	}
	h50b, h50 := metricstext.Quantile(bs, 0.50)
	h99b, h99 := metricstext.Quantile(bs, 0.99)
	b.Logf("    parley_agent_wake_seconds (the manager: lastActivityTime, in whole seconds, → the woken pod's status written): %.0f wakes, p50 ≤ %g s (est. %.3f), p99 ≤ %g s (est. %.3f)",
		metricstext.Delta(before.mgr, after.mgr, "parley_agent_wake_seconds_count"), h50b, h50, h99b, h99)
	b.Logf("    reconciles: %s", reconcileSummary(before, after, n, after.at.Sub(before.at).Seconds()))
	b.Logf("    manager client requests %.0f (%s)", metricstext.Delta(before.mgr, after.mgr, "rest_client_requests_total"), clientCodes(before.mgr, after.mgr))
	b.Logf("    API server requests during the burst (verb, resource, code, count):\n      %s",
		strings.Join(head(metricstext.APIRequests(before.api, after.api, float64(n), "wake"), 14), "\n      "))
	b.Logf("    CPU, cores in use on average: %s", cpuReport(before, after))
	b.ReportMetric(float64(p50)/float64(time.Millisecond), "wake-p50-ms")
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "wake-p99-ms")
	b.ReportMetric(float64(pmax)/float64(time.Millisecond), "wake-max-ms")
	b.ReportMetric(total.Seconds(), "all-woken-s")
}

// fairness compares the order in which the wakes were acknowledged with the order in which
// their pods arrived: the largest difference of places, and the mean latency of the first and
// the last tenth acknowledged. A FIFO of wakes served by a bounded number of workers keeps
// the difference near that number, whatever the burst's size.
func fairness(wakes []wake) (maxDisplacement int, firstTenth, lastTenth time.Duration) {
	n := len(wakes)
	byAck := slices.Clone(wakes)
	slices.SortFunc(byAck, func(a, b wake) int { return a.acked.Compare(b.acked) })
	byArrival := slices.Clone(wakes)
	slices.SortFunc(byArrival, func(a, b wake) int { return a.arrived.Compare(b.arrived) })
	place := make(map[string]int, n)
	for i, w := range byArrival {
		place[w.conv] = i
	}
	for i, w := range byAck {
		maxDisplacement = max(maxDisplacement, int(math.Abs(float64(place[w.conv]-i))))
	}
	tenth := max(n/10, 1)
	mean := func(ws []wake) time.Duration {
		var sum time.Duration
		for _, w := range ws {
			sum += w.latency()
		}
		return sum / time.Duration(len(ws))
	}
	return maxDisplacement, mean(byAck[:tenth]), mean(byAck[n-tenth:])
}

// arrivalsByAck lists each pod's arrival after the burst's start, in tenths of a second, in
// the order the messages were acknowledged: a FIFO shows a rising staircase.
func arrivalsByAck(w woken) string {
	byAck := slices.Clone(w.wakes)
	slices.SortFunc(byAck, func(a, b wake) int { return a.acked.Compare(b.acked) })
	out := make([]string, len(byAck))
	for i, wk := range byAck {
		out[i] = strconv.Itoa(int(wk.arrived.Sub(w.start) / (100 * time.Millisecond)))
	}
	return strings.Join(out, " ")
}

// asleepWatch follows which of the namespace's agents sleep, through the harness's cache.
type asleepWatch struct {
	mu     sync.Mutex
	asleep map[string]bool
}

func watchAsleep(ctx context.Context, bn *bench) (*asleepWatch, error) {
	w := &asleepWatch{asleep: map[string]bool{}}
	hcache, err := cache.New(bn.kube, cache.Options{
		Scheme: bn.scheme, DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, err
	}
	inf, err := hcache.GetInformer(ctx, &parleyv1alpha1.Conversation{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: w.observe, UpdateFunc: func(_, o any) { w.observe(o) },
	}); err != nil {
		return nil, err
	}
	go func() { _ = hcache.Start(ctx) }()
	if !hcache.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the harness's cache did not sync")
	}
	return w, nil
}

func (w *asleepWatch) observe(obj any) {
	conv, ok := obj.(*parleyv1alpha1.Conversation)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asleep[conv.Name] = conv.AgentAsleep()
}

func (w *asleepWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, a := range w.asleep {
		if a {
			n++
		}
	}
	return n
}

// waitFor waits until n agents sleep, for at most timeout.
func (w *asleepWatch) waitFor(ctx context.Context, n int, timeout time.Duration, mgr *managerProcess) error {
	deadline := time.Now().Add(timeout)
	for w.count() < n {
		select {
		case <-mgr.Exited():
			return fmt.Errorf("manager exited: %w (log %s)", mgr.Err(), mgr.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d agents asleep after %s", w.count(), n, timeout)
		}
	}
	return nil
}

func countPods(ctx context.Context, pods typedcorev1.PodInterface) (int, error) {
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(list.Items), nil
}
