package crashbench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/test/support/podwatch"
)

// agentsPerRun: crashes go round-robin over this many Conversations, and each agent
// completes a turn between two of its crashes (so no turn fails three times in a row, which
// would be a poison turn and end the restarts).
const agentsPerRun = 10

// BenchmarkCrashToNewPod: one op is one agent crash, from the harness's write of the
// Failed pod status (exit 1) to the arrival, on the harness's pod watch, of the next
// attempt's pod. Crashes are one at a time: the figure is the latency of one restart, not
// the throughput of many. Between crashes (not timed) the agent completes a turn and its new
// pod is reported Running. Reports p50/p90/p99/max and API calls per restart; the log breaks
// the latency into the stages of the chain and lists the calls.
func BenchmarkCrashToNewPod(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := podwatch.Start(ctx, env.Clientset.CoreV1().Pods(namespace))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	metricBefore := histogram()

	b.StopTimer()
	agents := make([]*agent, 0, agentsPerRun)
	samples := make([]sample, 0, b.N)
	for i := range b.N {
		if len(agents) < agentsPerRun {
			agents = append(agents, newAgent(ctx, b))
		}
		a := agents[i%len(agents)]
		if a.restarts > 0 {
			a.appendMessages(ctx, b, 2) // the answer to the open turn and the next user message
		}
		s := crashOnce(ctx, b, a, w) // starts and stops the timer
		b.StopTimer()
		settle(ctx, b, a, &s)
		samples = append(samples, s)
	}
	report(b, samples, metricBefore)
}

// sample is one crash: its latency and what the manager did for it.
type sample struct {
	conv, pod, checkpoint, bundle string
	// t0: the crash write is sent; written: it returned; arrived: the new pod reached the watch.
	t0, written, arrived time.Time
	// windowEnd: the manager went quiet after the restart (status, Checkpoint Ready, events).
	windowEnd time.Time
	calls     []apiCall
	// reconciles of the Conversation in [t0, windowEnd].
	reconciles []time.Time
}

func (s sample) latency() time.Duration { return s.arrived.Sub(s.t0) }

// crashOnce writes the crash and waits for the next pod: the timed part.
func crashOnce(ctx context.Context, b *testing.B, a *agent, w *podwatch.Watch) sample {
	b.Helper()
	b.StopTimer()
	pod := a.pod(ctx, b, a.attempt)
	crashed(pod)
	next := agentpod.PodName(a.conv.Name, a.attempt+1)
	arrival := w.Expect(next)
	s := sample{conv: a.conv.Name, pod: next, checkpoint: a.crashCheckpoint(), bundle: a.bundleName(a.attempt + 1)}
	b.StartTimer()
	s.t0 = time.Now()
	if err := harness.Status().Update(ctx, pod); err != nil {
		b.Fatal(err)
	}
	s.written = time.Now()
	select {
	case s.arrived = <-arrival:
	case <-time.After(30 * time.Second):
		b.Fatalf("no pod %s 30 s after the crash of %s", next, pod.Name)
	}
	return s
}

// settle waits until the restart is complete (status names the new pod, the Crash Checkpoint
// is Ready) and the manager has been quiet for 200 ms, records what the manager did, then
// reports the new pod Running.
func settle(ctx context.Context, b *testing.B, a *agent, s *sample) {
	b.Helper()
	a.restarts++
	a.attempt++
	a.waitFor(ctx, b, "the restart recorded", func() bool {
		st := a.conv.Status.Agent
		return st != nil && st.PodName == s.pod && st.Restarts == a.restarts
	})
	ckpt := &parleyv1alpha1.Checkpoint{}
	poll(ctx, b, "Checkpoint "+s.checkpoint+" Ready", func() bool {
		err := harness.Get(ctx, client.ObjectKey{Namespace: namespace, Name: s.checkpoint}, ckpt)
		return err == nil && ckpt.Status.Phase == parleyv1alpha1.CheckpointReady
	})
	poll(ctx, b, "the manager quiet", func() bool { return time.Since(calls.lastEnd()) >= 200*time.Millisecond })
	s.windowEnd = time.Now()
	s.calls = calls.between(s.t0, s.windowEnd)
	s.reconciles = reconciles.between(s.conv, s.t0, s.windowEnd)
	a.running(ctx, b, a.pod(ctx, b, a.attempt))
}

// stages splits one crash's latency along the chain. A stage whose call is missing is -1.
type stages struct {
	write, toReconcile, beforeCheckpoint, checkpoint, beforeBundle, bundle, beforePod, pod, toWatch time.Duration
}

var stageNames = []string{
	"crash status write (the harness's round trip)",
	"crash write returned → reconcile starts (manager's watch, queue)",
	"reconcile start → Checkpoint create sent (reads: history summary, pod, turns)",
	"Checkpoint create (round trip)",
	"Checkpoint created → bundle ConfigMap create sent (bundle built from the history)",
	"bundle ConfigMap create (round trip)",
	"bundle created → pod create sent (pod built)",
	"pod create (round trip)",
	"pod created → harness's watch receives it",
}

func (st stages) list() []time.Duration {
	return []time.Duration{st.write, st.toReconcile, st.beforeCheckpoint, st.checkpoint, st.beforeBundle, st.bundle, st.beforePod, st.pod, st.toWatch}
}

func (s sample) stages() (stages, bool) {
	find := func(resource, name string) (apiCall, bool) {
		for _, c := range s.calls {
			if c.verb == "create" && c.resource == resource && c.name == name {
				return c, true
			}
		}
		return apiCall{}, false
	}
	ck, ok1 := find("checkpoints", s.checkpoint)
	cm, ok2 := find("configmaps", s.bundle)
	pod, ok3 := find("pods", s.pod)
	if !ok1 || !ok2 || !ok3 {
		return stages{}, false
	}
	var start time.Time // the reconcile that created the Checkpoint: the last to start before it
	for _, r := range s.reconciles {
		if !r.After(ck.start) {
			start = r
		}
	}
	if start.IsZero() {
		return stages{}, false
	}
	return stages{
		write: s.written.Sub(s.t0), toReconcile: start.Sub(s.written), beforeCheckpoint: ck.start.Sub(start), checkpoint: ck.end.Sub(ck.start),
		beforeBundle: cm.start.Sub(ck.end), bundle: cm.end.Sub(cm.start), beforePod: pod.start.Sub(cm.end),
		pod: pod.end.Sub(pod.start), toWatch: s.arrived.Sub(pod.end),
	}, true
}

func report(b *testing.B, samples []sample, metricBefore *dto.Histogram) {
	b.Helper()
	lat := make([]time.Duration, len(samples))
	var callsTotal, criticalTotal, reconcileTotal int
	perKind := map[string]int{}
	criticalKind := map[string]int{}
	var split [][]time.Duration
	for i, s := range samples {
		lat[i] = s.latency()
		callsTotal += len(s.calls)
		reconcileTotal += len(s.reconciles)
		for _, c := range s.calls {
			kind := c.verb + " " + c.resource
			perKind[kind]++
			if !c.start.After(s.arrived) {
				criticalKind[kind]++
				criticalTotal++
			}
		}
		if st, ok := s.stages(); ok {
			split = append(split, st.list())
		}
	}
	n := float64(len(samples))
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 90)), "p90-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
	b.ReportMetric(ms(slices.Max(lat)), "max-ms")
	b.ReportMetric(float64(callsTotal)/n, "calls/restart")
	b.ReportMetric(float64(reconcileTotal)/n, "reconciles/restart")
	if len(samples) < 100 {
		return // the short sizing runs of the framework: no breakdown
	}

	var out strings.Builder
	fmt.Fprintf(&out, "%d crashes, backoff %s; latency p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		len(samples), backoff, ms(percentile(lat, 50)), ms(percentile(lat, 90)), ms(percentile(lat, 99)), ms(slices.Max(lat)))
	fmt.Fprintf(&out, "stages (%d of %d crashes had every call found), ms: p50 / p90 / max\n", len(split), len(samples))
	for i, name := range stageNames {
		col := make([]time.Duration, len(split))
		for j := range split {
			col[j] = split[j][i]
		}
		if len(col) > 0 {
			fmt.Fprintf(&out, "  %-86s %7.1f %7.1f %7.1f\n", name, ms(percentile(col, 50)), ms(percentile(col, 90)), ms(slices.Max(col)))
		}
	}
	fmt.Fprintf(&out, "API calls per restart: %.1f in all, %.1f before the new pod reached the watch\n", float64(callsTotal)/n, float64(criticalTotal)/n)
	kinds := make([]string, 0, len(perKind))
	for k := range perKind {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return perKind[kinds[i]] > perKind[kinds[j]] })
	for _, k := range kinds {
		fmt.Fprintf(&out, "  %-40s %5.2f (%5.2f before the pod)\n", k, float64(perKind[k])/n, float64(criticalKind[k])/n)
	}
	if after := histogram(); metricBefore != nil && after != nil {
		count := after.GetSampleCount() - metricBefore.GetSampleCount()
		if count > 0 {
			mean := (after.GetSampleSum() - metricBefore.GetSampleSum()) / float64(count)
			fmt.Fprintf(&out, "parley_agent_crash_to_start_seconds: %d observations for %d crashes, mean %.1f ms (from the kubelet's finishedAt, which has whole seconds)\n",
				count, len(samples), mean*1000)
		}
	}
	timeline(&out, "the last crash", samples[len(samples)-1])
	slowest := slices.MaxFunc(samples, func(x, y sample) int { return int(x.latency() - y.latency()) })
	timeline(&out, "the slowest crash", slowest)
	b.Log("\n" + out.String())
}

// timeline lists one crash's calls and reconciles in order.
func timeline(out *strings.Builder, title string, s sample) {
	type line struct {
		at   time.Duration
		text string
	}
	lines := make([]line, 0, len(s.calls)+len(s.reconciles)+2)
	for _, c := range s.calls {
		lines = append(lines, line{c.start.Sub(s.t0), fmt.Sprintf("%6.1f  %-6s %-22s %s (%d)", ms(c.end.Sub(c.start)), c.verb, c.resource, c.name, c.code)})
	}
	for _, r := range s.reconciles {
		lines = append(lines, line{r.Sub(s.t0), "        Conversation reconcile starts"})
	}
	lines = append(lines, line{s.written.Sub(s.t0), "        the crash write returns"}, line{s.latency(), "        the new pod reaches the harness's watch"})
	slices.SortStableFunc(lines, func(x, y line) int { return int(x.at - y.at) })
	fmt.Fprintf(out, "%s, %s (ms after the crash write was sent; round trip; call; HTTP status):\n", title, s.pod)
	for _, l := range lines {
		fmt.Fprintf(out, "  %7.1f %s\n", ms(l.at), l.text)
	}
}

// histogram reads parley_agent_crash_to_start_seconds.
func histogram() *dto.Histogram {
	var m dto.Metric
	if err := metrics.CrashToStart.Write(&m); err != nil {
		return nil
	}
	return m.GetHistogram()
}

// percentile is the nearest-rank percentile.
func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(i, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
