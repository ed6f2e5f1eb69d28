package scale

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/test/support/benchcpu"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/managerproc"
	"github.com/parley-dev/parley/test/support/metricstext"
	"github.com/parley-dev/parley/test/support/repopath"
)

const (
	namespace = "scale"
	// systemPrompt is each Conversation's first history record, as in the ConfigMap sample.
	systemPrompt = "You are a helpful support agent for the Parley project. Answer briefly, cite the " +
		"documentation when you can, and say so when you do not know."
	mib = 1 << 20
)

// settings are the benchmarks' knobs, from the environment (see `make bench-scale`,
// `make bench-wake-scale`).
type settings struct {
	n           int           // PARLEY_SCALE_N: Conversations
	asleep      int           // PARLEY_SCALE_ASLEEP: Conversations with sleeping agents (BenchmarkWakeAtOnce)
	wake        int           // PARLEY_SCALE_WAKE: of those, woken at once
	workers     int           // PARLEY_SCALE_WORKERS: parallel creates
	expireAfter time.Duration // PARLEY_SCALE_EXPIRE_AFTER: first expiry, after creation starts
	spread      time.Duration // PARLEY_SCALE_SPREAD: expiries spread over this window
	timeout     time.Duration // PARLEY_SCALE_TIMEOUT: give up waiting for a phase
	scrapeEvery time.Duration // PARLEY_SCALE_SCRAPE: the manager's /metrics is scraped this often, as Prometheus would
	managerArgs []string      // PARLEY_SCALE_MANAGER_ARGS: extra manager flags (they win)
	dir         string        // PARLEY_SCALE_DIR: keep the manager binary and log here
	onlyA       bool          // PARLEY_SCALE_PHASES=a: stop after phase (a), for experiments
	src         string        // PARLEY_SCALE_SRC: build the manager and take the CRDs from this tree (default: this repository)
	profile     time.Duration // PARLEY_SCALE_PROFILE: CPU profiles of the API server and the manager this long in the expiry window
}

func loadSettings(b *testing.B) settings {
	if os.Getenv("PARLEY_SCALE") != "1" {
		b.Skip("the scale benchmarks run only with PARLEY_SCALE=1 (make bench-scale, make bench-wake-scale)")
	}
	s := settings{
		n: 10000, asleep: 1000, wake: 100, workers: 8, expireAfter: 300 * time.Second, spread: 60 * time.Second,
		timeout: 15 * time.Minute, scrapeEvery: 15 * time.Second,
		managerArgs: strings.Fields(os.Getenv("PARLEY_SCALE_MANAGER_ARGS")),
		dir:         os.Getenv("PARLEY_SCALE_DIR"),
		src:         os.Getenv("PARLEY_SCALE_SRC"),
		onlyA:       os.Getenv("PARLEY_SCALE_PHASES") == "a",
	}
	for env, p := range map[string]*int{
		"PARLEY_SCALE_N": &s.n, "PARLEY_SCALE_ASLEEP": &s.asleep, "PARLEY_SCALE_WAKE": &s.wake, "PARLEY_SCALE_WORKERS": &s.workers,
	} {
		if v := os.Getenv(env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want a positive integer", env, v)
			}
			*p = n
		}
	}
	for env, p := range map[string]*time.Duration{
		"PARLEY_SCALE_EXPIRE_AFTER": &s.expireAfter, "PARLEY_SCALE_SPREAD": &s.spread,
		"PARLEY_SCALE_TIMEOUT": &s.timeout, "PARLEY_SCALE_SCRAPE": &s.scrapeEvery,
		"PARLEY_SCALE_PROFILE": &s.profile,
	} {
		if v := os.Getenv(env); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				b.Fatalf("%s=%q: want a positive duration", env, v)
			}
			*p = d
		}
	}
	if s.dir == "" {
		s.dir = b.TempDir()
	}
	return s
}

// tracker records when the harness's watch first saw each Conversation available and expired.
type tracker struct {
	n                    int
	mu                   sync.Mutex
	avail, expired       map[string]time.Time
	allAvail, allExpired chan struct{}
}

func newTracker(n int) *tracker {
	return &tracker{
		n: n, avail: map[string]time.Time{}, expired: map[string]time.Time{},
		allAvail: make(chan struct{}), allExpired: make(chan struct{}),
	}
}

func (t *tracker) observe(obj any) {
	conv, ok := obj.(*parleyv1alpha1.Conversation)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.avail[conv.Name]; !seen &&
		meta.IsStatusConditionTrue(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable) {
		t.avail[conv.Name] = now
		if len(t.avail) == t.n {
			close(t.allAvail)
		}
	}
	if _, seen := t.expired[conv.Name]; !seen &&
		meta.IsStatusConditionTrue(conv.Status.Conditions, parleyv1alpha1.ConditionExpired) {
		t.expired[conv.Name] = now
		if len(t.expired) == t.n {
			close(t.allExpired)
		}
	}
}

func (t *tracker) counts() (avail, expired int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.avail), len(t.expired)
}

func (t *tracker) last(m map[string]time.Time) (last time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, at := range m {
		if at.After(last) {
			last = at
		}
	}
	return last
}

// snapshot is the state of the processes at one instant.
type snapshot struct {
	at         time.Time
	mgr, api   metricstext.Set
	cpu        map[string]float64
	busy, tot  float64
	mem        memStatus
	load       string
	mgrScrapes int
}

type bench struct {
	b       *testing.B
	s       settings
	kube    *rest.Config
	c       client.Client
	scheme  *runtime.Scheme
	hc      *http.Client // the manager's metrics
	apiHC   *http.Client // the API server's metrics
	mgr     *managerProcess
	pids    map[string]int
	maxRSS  atomic.Int64
	scrapes atomic.Int64
}

// BenchmarkConversations10k creates PARLEY_SCALE_N (10,000) Conversations with ConfigMap
// histories on envtest and measures, against the real manager binary in its own process:
//
//	(a) the time from the first create until every Conversation has HistoryAvailable=True,
//	    the manager's peak RSS (VmHWM) and reconciles/s (controller_runtime_reconcile_total);
//	(b) expiry lateness: the same Conversations expire within one minute (whole-second ttls
//	    spread over PARLEY_SCALE_SPREAD, starting PARLEY_SCALE_EXPIRE_AFTER after creation
//	    began); lateness is the Expired condition's lastTransitionTime minus status.expiresAt
//	    (1 s resolution), the manager's parley_expiry_lateness_seconds histogram, and the
//	    instant this harness's watch saw Expired=True.
//
// It runs once whatever b.N is and only with PARLEY_SCALE=1: `make bench-scale`.
func BenchmarkConversations10k(b *testing.B) {
	s := loadSettings(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var flags []string
	pprofURL := ""
	if s.profile > 0 {
		port, err := managerproc.FreePort()
		if err != nil {
			b.Fatal(err)
		}
		pprofURL = fmt.Sprintf("http://127.0.0.1:%d", port)
		flags = append(flags, "--pprof-bind-address=127.0.0.1:"+strconv.Itoa(port))
	}
	bn, stop := setUp(ctx, b, s, flags)
	defer stop()
	mgr := bn.mgr

	// The harness's own watch: when each Conversation was first seen available and expired.
	tr := newTracker(s.n)
	hcache, err := cache.New(bn.kube, cache.Options{
		Scheme: bn.scheme, DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		b.Fatal(err)
	}
	inf, err := hcache.GetInformer(ctx, &parleyv1alpha1.Conversation{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: tr.observe, UpdateFunc: func(_, o any) { tr.observe(o) },
	}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = hcache.Start(ctx) }()
	if !hcache.WaitForCacheSync(ctx) {
		b.Fatal("the harness's cache did not sync")
	}

	go bn.sampleRSS(ctx)
	go bn.scrapeLoop(ctx)

	idle := bn.snapshot(ctx)
	b.Logf("manager idle: RSS %.1f MiB", float64(idle.mem.rss)/mib)

	// (a) Create with a bounded number of workers; whole-second ttls spread the expiries.
	t0 := time.Now()
	expiryBase := t0.Truncate(time.Second).Add(s.expireAfter)
	createdAt, createErr := bn.createAll(ctx, expiryBase)
	tCreated := time.Now()
	if createErr != nil {
		b.Fatal(createErr)
	}
	b.Logf("created %d Conversations in %.1f s with %d workers (%.0f/s)", s.n, tCreated.Sub(t0).Seconds(),
		s.workers, float64(s.n)/tCreated.Sub(t0).Seconds())

	// Wait until every Conversation is available; a Conversation whose session expires before
	// its history was created (Retain) never becomes available, so stop when all have expired.
	allAvailable := true
	tick := time.NewTicker(time.Second)
	giveUp := time.After(s.timeout)
waitA:
	for {
		select {
		case <-tr.allAvail:
			break waitA
		case <-tick.C:
			if _, ne := tr.counts(); ne == s.n {
				allAvailable = false
				break waitA
			}
		case <-giveUp:
			allAvailable = false
			break waitA
		case <-mgr.Exited():
			b.Fatalf("manager exited: %v (log %s)", mgr.Err(), mgr.logPath)
		}
	}
	tick.Stop()
	snapA := bn.snapshot(ctx)
	nAvail, nExpiredAtA := tr.counts()
	tA := tr.last(tr.avail)
	if !allAvailable {
		b.Errorf("only %d of %d Conversations reached HistoryAvailable=True (%d expired first; gave up after %s)",
			nAvail, s.n, nExpiredAtA, snapA.at.Sub(t0).Round(time.Second))
		tA = snapA.at
	}
	bn.reportA(idle, snapA, t0, tCreated, tA, createdAt, tr, nExpiredAtA)

	if s.onlyA {
		return
	}
	// (b) Expiry: wait for the window to pass and every Conversation to be seen expired.
	windowEnd := expiryBase.Add(s.spread)
	b.Logf("expiry window %s .. %s (%.0f s after creation began); waiting", expiryBase.Format("15:04:05"),
		windowEnd.Format("15:04:05"), expiryBase.Sub(t0).Seconds())
	if s.profile > 0 {
		go bn.profileExpiry(ctx, expiryBase, pprofURL)
	}
	select {
	case <-tr.allExpired:
	case <-time.After(time.Until(windowEnd) + s.timeout):
		_, ne := tr.counts()
		b.Errorf("only %d of %d Conversations were seen expired %s after the window closed", ne, s.n, s.timeout)
	case <-mgr.Exited():
		b.Fatalf("manager exited: %v (log %s)", mgr.Err(), mgr.logPath)
	}
	// The manager observes the lateness metric just after its status patch returns, which can be
	// after the harness saw the patch: give the last observations a moment to land.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if ms, err := metricstext.Scrape(ctx, bn.hc, mgr.metricsURL); err == nil && ms.Sum("parley_expiry_lateness_seconds_count") >= float64(s.n) {
			break
		}
	}
	snapB := bn.snapshot(ctx)
	bn.reportB(ctx, snapA, snapB, tr)
	b.Logf("load average at end %s", loadAvg())
}

// setUp runs a scale benchmark's processes: it builds the manager of the tree under test
// (PARLEY_SCALE_SRC, default this repository), starts envtest with that tree's CRDs and the
// namespace, and runs the manager binary against it with flags and then PARLEY_SCALE_MANAGER_ARGS
// (which win), until its controller runs. stop ends what it started.
func setUp(ctx context.Context, b *testing.B, s settings, flags []string) (bn *bench, stop func()) {
	logf.SetLogger(logr.Discard()) // envtest and the harness's cache; the manager logs to its own file
	stops := make([]func(), 0, 2)
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	fail := func(err error) {
		stop()
		b.Fatal(err)
	}
	root := s.src
	if root == "" {
		var err error
		if root, err = repopath.Root(); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("machine: %s; load average at start %s", machine(), loadAvg())
	b.Logf("building the manager (go build ./cmd/manager) into %s", s.dir)
	if rev, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output(); err == nil {
		b.Logf("source: %s at %s", root, strings.TrimSpace(string(rev)))
	} else {
		b.Logf("source: %s", root)
	}
	bin, err := managerproc.Build(root, s.dir)
	if err != nil {
		b.Fatal(err)
	}

	kube, stopEnv, err := kubeenv.Start()
	if err != nil {
		b.Fatal(err)
	}
	stops = append(stops, stopEnv)
	if err := kubeenv.InstallCRDs(kube, root); err != nil {
		fail(err)
	}
	c, scheme, err := kubeenv.NewClient(kube)
	if err != nil {
		fail(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		fail(err)
	}
	apiHC, err := rest.HTTPClientFor(kube)
	if err != nil {
		fail(err)
	}
	bn = &bench{
		b: b, s: s, kube: kube, c: c, scheme: scheme, hc: &http.Client{}, apiHC: apiHC,
		pids: map[string]int{"etcd": benchcpu.ChildPID("etcd"), "kube-apiserver": benchcpu.ChildPID("kube-apiserver"), "harness": os.Getpid()},
	}
	kubeconfig := filepath.Join(s.dir, "kubeconfig")
	if err := kubeenv.WriteKubeconfig(kubeconfig, kube, ""); err != nil {
		fail(err)
	}
	mgr, args, err := startManager(bin, kubeconfig, filepath.Join(s.dir, "manager.log"), append(flags, s.managerArgs...))
	if err != nil {
		fail(err)
	}
	stops = append(stops, mgr.stop)
	bn.mgr = mgr
	bn.pids["manager"] = mgr.PID()
	b.Logf("manager: %s %s (log %s)", bin, strings.Join(args, " "), mgr.logPath)
	if err := mgr.waitReady(ctx, bn.hc); err != nil {
		fail(err)
	}
	return bn, stop
}

// createAll creates the Conversations with s.workers workers and returns when each create
// returned. Conversation i expires at a whole second expiryBase + i·spread/n.
func (bn *bench) createAll(ctx context.Context, expiryBase time.Time) ([]time.Time, error) {
	s := bn.s
	createdAt := make([]time.Time, s.n)
	err := inParallel(ctx, s.n, s.workers, func(ctx context.Context, i int) error {
		at := expiryBase.Add(time.Duration(int64(i) * int64(s.spread) / int64(s.n))).Truncate(time.Second)
		if err := bn.create(ctx, i, at); err != nil {
			return err
		}
		createdAt[i] = time.Now()
		return nil
	})
	return createdAt, err
}

// inParallel calls do for 0 … n-1 on at most workers goroutines and returns the first error;
// once one failed, no further call starts.
func inParallel(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return do(ctx, i) })
	}
	return g.Wait()
}

func convName(i int) string { return fmt.Sprintf("conv-%05d", i) }

// create makes Conversation i expiring at the whole second expiresAt. creationTimestamp has a
// 1 s resolution, so a whole-second ttl from the current second gives a whole-second expiry.
func (bn *bench) create(ctx context.Context, i int, expiresAt time.Time) error {
	for attempt := 0; ; attempt++ {
		ttl := expiresAt.Sub(time.Now().Truncate(time.Second))
		conv := &parleyv1alpha1.Conversation{
			ObjectMeta: metav1.ObjectMeta{Name: convName(i), Namespace: namespace},
			Spec: parleyv1alpha1.ConversationSpec{
				SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: systemPrompt},
				History:      parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}},
				Lifetime:     parleyv1alpha1.LifetimeSpec{TTL: &metav1.Duration{Duration: ttl}},
			},
		}
		err := bn.c.Create(ctx, conv)
		switch {
		case err == nil, attempt > 0 && apierrors.IsAlreadyExists(err):
			return nil
		case attempt < 5 && (apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) ||
			apierrors.IsTimeout(err) || apierrors.IsInternalError(err)):
			time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
		default:
			return fmt.Errorf("creating %s: %w", conv.Name, err)
		}
	}
}

// sampleRSS follows the manager's VmRSS every 250 ms (VmHWM gives the true peak).
func (bn *bench) sampleRSS(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if m, err := readMem(bn.mgr.PID()); err == nil && m.rss > bn.maxRSS.Load() {
				bn.maxRSS.Store(m.rss)
			}
		}
	}
}

// scrapeLoop scrapes the manager's metrics as a Prometheus server would; the scrape itself
// costs the manager (the parley_conversations collector lists every Conversation).
func (bn *bench) scrapeLoop(ctx context.Context) {
	t := time.NewTicker(bn.s.scrapeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := metricstext.Scrape(ctx, bn.hc, bn.mgr.metricsURL); err == nil {
				bn.scrapes.Add(1)
			}
		}
	}
}

func (bn *bench) snapshot(ctx context.Context) snapshot {
	sn := snapshot{at: time.Now(), cpu: map[string]float64{}, load: loadAvg()}
	for name, pid := range bn.pids {
		sn.cpu[name] = cpuSeconds(pid)
	}
	sn.busy, sn.tot = machineCPU()
	sn.mem, _ = readMem(bn.mgr.PID())
	var err error
	if sn.mgr, err = metricstext.Scrape(ctx, bn.hc, bn.mgr.metricsURL); err != nil {
		bn.b.Logf("scraping the manager: %v", err)
	}
	if sn.api, err = metricstext.Scrape(ctx, bn.apiHC, strings.TrimSuffix(bn.kube.Host, "/")+"/metrics"); err != nil {
		bn.b.Logf("scraping the API server: %v", err)
	}
	sn.mgrScrapes = int(bn.scrapes.Load())
	return sn
}

// cpuReport says where the CPU went between two snapshots, as cores in use on average.
func cpuReport(a, b snapshot) string {
	secs := b.at.Sub(a.at).Seconds()
	parts := make([]string, 0, len(a.cpu)+2)
	var ours float64
	for _, name := range []string{"kube-apiserver", "etcd", "manager", "harness"} {
		d := b.cpu[name] - a.cpu[name]
		ours += d
		parts = append(parts, fmt.Sprintf("%s %.2f", name, d/secs))
	}
	busy := (b.busy - a.busy) / secs
	parts = append(parts, fmt.Sprintf("others %.2f", max(busy-ours/secs, 0)), fmt.Sprintf("machine busy %.2f of %.0f", busy, (b.tot-a.tot)/secs))
	return strings.Join(parts, ", ")
}

// reconcileSummary describes the Conversation controller's reconciles between two snapshots:
// how many, by result, per second over secs, and the mean reconcile time and queue wait.
func reconcileSummary(before, after snapshot, n int, secs float64) string {
	const name = "controller_runtime_reconcile_total"
	rec := metricstext.Delta(before.mgr, after.mgr, name, "controller", "conversation")
	results := []string{"success", "error", "requeue", "requeue_after"}
	byResult := make([]string, 0, len(results))
	for _, r := range results {
		byResult = append(byResult, fmt.Sprintf("%s %.0f", r, metricstext.Delta(before.mgr, after.mgr, name, "controller", "conversation", "result", r)))
	}
	recSecs := metricstext.Delta(before.mgr, after.mgr, "controller_runtime_reconcile_time_seconds_sum", "controller", "conversation")
	recCount := metricstext.Delta(before.mgr, after.mgr, "controller_runtime_reconcile_time_seconds_count", "controller", "conversation")
	qSecs := metricstext.Delta(before.mgr, after.mgr, "workqueue_queue_duration_seconds_sum", "name", "conversation")
	qCount := metricstext.Delta(before.mgr, after.mgr, "workqueue_queue_duration_seconds_count", "name", "conversation")
	return fmt.Sprintf("%.0f (%.2f per Conversation; %s), %.0f/s over the %.1f s; mean reconcile %.1f ms, mean queue wait %.1f ms",
		rec, rec/float64(n), strings.Join(byResult, ", "), rec/secs, secs,
		1000*recSecs/math.Max(recCount, 1), 1000*qSecs/math.Max(qCount, 1))
}

func (bn *bench) reportA(idle, a snapshot, t0, tCreated, tA time.Time, createdAt []time.Time, tr *tracker, expiredEarly int) {
	b, s := bn.b, bn.s
	elapsed := tA.Sub(t0)
	b.Logf("(a) all %d HistoryAvailable=True %.1f s after the first create (%.1f s after the last create returned)",
		s.n, elapsed.Seconds(), tA.Sub(tCreated).Seconds())

	var lat []time.Duration
	tr.mu.Lock()
	for i, at := range createdAt {
		if seen, ok := tr.avail[convName(i)]; ok && !at.IsZero() {
			lat = append(lat, seen.Sub(at))
		}
	}
	tr.mu.Unlock()
	p50, p99, pmax := percentiles(lat)
	b.Logf("    create returned → available seen by the harness: p50 %s, p99 %s, max %s", p50, p99, pmax)

	b.Logf("    reconciles: %s", reconcileSummary(idle, a, s.n, elapsed.Seconds()))
	reqs := metricstext.Delta(idle.mgr, a.mgr, "rest_client_requests_total")
	b.Logf("    histories created: %.0f; store errors: %.0f; manager client requests %.0f, %.1f per Conversation (%s)",
		metricstext.Delta(idle.mgr, a.mgr, "parley_histories_created_total"), metricstext.Delta(idle.mgr, a.mgr, "parley_history_store_errors_total"),
		reqs, reqs/float64(s.n), clientCodes(idle.mgr, a.mgr))
	hwm := max(a.mem.hwm, bn.maxRSS.Load())
	b.Logf("    manager RSS: peak (VmHWM) %.1f MiB, now %.1f MiB, idle %.1f MiB; Go heap in use %.1f MiB; %d scrapes of /metrics meanwhile",
		float64(hwm)/mib, float64(a.mem.rss)/mib, float64(idle.mem.rss)/mib,
		a.mgr.Sum("go_memstats_heap_inuse_bytes")/mib, a.mgrScrapes-idle.mgrScrapes)
	b.Logf("    CPU, cores in use on average over the phase: %s; load average %s", cpuReport(idle, a), a.load)
	b.Logf("    API server requests during the phase (verb, resource, code, count):\n      %s",
		strings.Join(head(metricstext.APIRequests(idle.api, a.api, float64(s.n), "Conversation"), 14), "\n      "))
	if expiredEarly > 0 {
		b.Logf("    NOTE: %d Conversations had already expired when the last became available: the phases overlapped", expiredEarly)
	}
	bar := "HOLDS"
	if elapsed > 120*time.Second || hwm > 400*mib {
		bar = "FAILS"
	}
	b.Logf("    bar (≤ 120 s, RSS ≤ 400 MiB): %s", bar)
	b.ReportMetric(tCreated.Sub(t0).Seconds(), "create-s")
	b.ReportMetric(elapsed.Seconds(), "all-available-s")
	b.ReportMetric(float64(hwm)/mib, "peak-RSS-MiB")
	b.ReportMetric(metricstext.Delta(idle.mgr, a.mgr, "controller_runtime_reconcile_total", "controller", "conversation")/elapsed.Seconds(), "reconciles/s")
}

func (bn *bench) reportB(ctx context.Context, a, end snapshot, tr *tracker) {
	b := bn.b
	var convs []parleyv1alpha1.Conversation
	cont := ""
	for {
		list := &parleyv1alpha1.ConversationList{}
		if err := bn.c.List(ctx, list, client.InNamespace(namespace), client.Limit(500), client.Continue(cont)); err != nil {
			b.Errorf("listing Conversations: %v", err)
			return
		}
		convs = append(convs, list.Items...)
		if cont = list.Continue; cont == "" {
			break
		}
	}
	var fromCond, observed []time.Duration
	perSecond := map[time.Time]time.Duration{} // the watch's largest lateness of each expiresAt second
	var mismatched, notWhole int
	var firstAt, lastAt time.Time
	tr.mu.Lock()
	for i := range convs {
		c := &convs[i]
		cond := meta.FindStatusCondition(c.Status.Conditions, parleyv1alpha1.ConditionExpired)
		if cond == nil || cond.Status != metav1.ConditionTrue || c.Status.ExpiresAt == nil {
			continue
		}
		exp := c.Status.ExpiresAt.Time
		if want := c.CreationTimestamp.Add(c.Spec.Lifetime.TTL.Duration); !want.Equal(exp) {
			mismatched++
		}
		if !exp.Equal(exp.Truncate(time.Second)) {
			notWhole++
		}
		if firstAt.IsZero() || exp.Before(firstAt) {
			firstAt = exp
		}
		if exp.After(lastAt) {
			lastAt = exp
		}
		fromCond = append(fromCond, cond.LastTransitionTime.Sub(exp))
		if seen, ok := tr.expired[c.Name]; ok {
			observed = append(observed, seen.Sub(exp))
			perSecond[exp] = max(perSecond[exp], seen.Sub(exp))
		}
	}
	tr.mu.Unlock()
	b.Logf("(b) %d of %d expired; expiresAt from %s to %s (%.0f s); %d expiresAt not creationTimestamp+ttl, %d not whole seconds",
		len(fromCond), len(convs), firstAt.Format("15:04:05"), lastAt.Format("15:04:05"), lastAt.Sub(firstAt).Seconds(), mismatched, notWhole)
	c50, c99, cmax := percentiles(fromCond)
	b.Logf("    lateness, Expired lastTransitionTime − status.expiresAt (1 s resolution: 0 s means < 1 s late): p50 %s, p99 %s, max %s", c50, c99, cmax)
	o50, o99, omax := percentiles(observed)
	b.Logf("    lateness as the harness's watch saw Expired=True (includes the status patch and watch delivery): p50 %s, p99 %s, max %s", o50, o99, omax)
	b.Logf("    the watch's largest lateness of each expiresAt second, in tenths of a second: %s", secondMaxima(perSecond))
	bs := end.mgr.Histogram("parley_expiry_lateness_seconds")
	count := end.mgr.Sum("parley_expiry_lateness_seconds_count")
	sum := end.mgr.Sum("parley_expiry_lateness_seconds_sum")
	h50b, h50 := metricstext.Quantile(bs, 0.50)
	h99b, h99 := metricstext.Quantile(bs, 0.99)
	b.Logf("    parley_expiry_lateness_seconds (the manager: reconcile start − expiresAt): %.0f observations, mean %.3f s, p50 ≤ %g s (est. %.3f), p99 ≤ %g s (est. %.3f)",
		count, sum/math.Max(count, 1), h50b, h50, h99b, h99)
	var cum []string
	for _, bk := range bs {
		cum = append(cum, fmt.Sprintf("≤%g:%.0f", bk.LE, bk.Count))
	}
	b.Logf("    histogram buckets (cumulative): %s", strings.Join(cum, " "))
	b.Logf("    reconciles during the expiry phase: %s", reconcileSummary(a, end, len(convs), end.at.Sub(a.at).Seconds()))
	b.Logf("    CPU during the expiry phase: %s", cpuReport(a, end))
	hwm := max(end.mem.hwm, bn.maxRSS.Load())
	rssBar := "HOLDS"
	if hwm > 400*mib {
		rssBar = "FAILS"
	}
	b.Logf("    manager RSS at end: peak over the whole run (VmHWM) %.1f MiB (≤ 400 MiB: %s), now %.1f MiB; Go heap in use %.1f MiB",
		float64(hwm)/mib, rssBar, float64(end.mem.rss)/mib, end.mgr.Sum("go_memstats_heap_inuse_bytes")/mib)
	b.Logf("    API server requests during the expiry phase:\n      %s", strings.Join(head(metricstext.APIRequests(a.api, end.api, float64(bn.s.n), "Conversation"), 10), "\n      "))
	bar := "HOLDS"
	if c99 >= time.Second || h99b > 1 {
		bar = "FAILS"
	}
	b.Logf("    bar (p99 ≤ 1 s): %s", bar)
	b.ReportMetric(c99.Seconds(), "lateness-cond-p99-s")
	b.ReportMetric(o99.Seconds()*1000, "lateness-watch-p99-ms")
	b.ReportMetric(h99*1000, "lateness-metric-p99-ms")
}

// secondMaxima lists the lateness of each second in order, in tenths, to tell a tail spread over
// the minute (every burst's last few) from one in a few seconds (a stall).
func secondMaxima(perSecond map[time.Time]time.Duration) string {
	seconds := make([]time.Time, 0, len(perSecond))
	for at := range perSecond {
		seconds = append(seconds, at)
	}
	slices.SortFunc(seconds, func(a, b time.Time) int { return a.Compare(b) })
	out := make([]string, len(seconds))
	for i, at := range seconds {
		out[i] = strconv.Itoa(int(perSecond[at] / (100 * time.Millisecond)))
	}
	return strings.Join(out, " ")
}

func clientCodes(before, after metricstext.Set) string {
	codes := map[string]float64{}
	for _, s := range after {
		if s.Name == "rest_client_requests_total" {
			codes[s.Labels["method"]+" "+s.Labels["code"]] += s.Value
		}
	}
	for _, s := range before {
		if s.Name == "rest_client_requests_total" {
			codes[s.Labels["method"]+" "+s.Labels["code"]] -= s.Value
		}
	}
	keys := make([]string, 0, len(codes))
	for k, v := range codes {
		if v >= 1 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s: %.0f", k, codes[k]))
	}
	return strings.Join(out, ", ")
}

func head(s []string, n int) []string { return s[:min(n, len(s))] }

// percentiles returns p50, p99 and the maximum (nearest rank).
func percentiles(d []time.Duration) (p50, p99, pmax time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	at := func(q float64) time.Duration {
		return d[max(int(math.Ceil(q*float64(len(d))))-1, 0)].Round(time.Millisecond)
	}
	return at(0.5), at(0.99), d[len(d)-1].Round(time.Millisecond)
}
