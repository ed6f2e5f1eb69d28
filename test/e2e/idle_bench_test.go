//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
)

const (
	// wakeBenchSuspendAfter: the agent sleeps soon after it answered, and its pod lives long
	// enough after the answer for the harness to read its log.
	wakeBenchSuspendAfter = 2 * time.Second
	// wakeBenchSettle is the rest between a suspension and the next wake, so each wake starts
	// from a quiet manager and node (the old pod's teardown done).
	wakeBenchSettle = time.Second
)

// idleWakeBench is the wake of an idle agent on the real node, the test agent's image already
// there: from the Session API's acknowledgement of a person's message to the sleeping agent,
// to the woken agent's answer seen on the harness's follow of the conversation. With
// PARLEY_NODE_WAKES=N set (make bench-wake-node) it runs N wakes and reports p50/p90/p99 and
// the median of each stage; without it, it skips. Label idle-bench.
func idleWakeBench(dynamicClient func() dynamic.Interface, manager func() *managerProcess) {
	It("measures a message to a sleeping agent until the woken agent's answer", Label("idle-bench"), func(ctx SpecContext) {
		wakes, _ := strconv.Atoi(os.Getenv("PARLEY_NODE_WAKES"))
		if wakes <= 0 {
			Skip("set PARLEY_NODE_WAKES=N to wake the test agent N times")
		}
		ns := newNamespace(ctx)
		grantAgentRole(ctx, ns)
		pods := watchPodStages(ctx, ns)
		idle := createIdleAgent(ctx, dynamicClient(), ns, "sleeper", wakeBenchSuspendAfter)
		person, err := parleyclient.New(parleyclient.Options{URL: "http://" + manager().apiAddr, Token: sessionToken(ctx, ns)})
		Expect(err).NotTo(HaveOccurred())
		answers := followAnswers(ctx, person, ns, "sleeper")

		idle.waitPodRunning(ctx, 1)
		ask := func(id string) time.Time {
			m := conversation.Message{ID: id, Role: conversation.RoleUser, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: id}}}
			_, err := person.Append(ctx, ns, "sleeper", []conversation.Message{m})
			Expect(err).NotTo(HaveOccurred())
			return time.Now()
		}
		ask("q0")
		answers.wait(ctx, "answer-q0")

		runs := make([]wakeRun, 0, wakes)
		for i := 1; i <= wakes; i++ {
			idle.waitAsleep(ctx, int32(i))
			time.Sleep(wakeBenchSettle)
			id := fmt.Sprintf("q%d", i)
			acked := ask(id)
			answered := answers.wait(ctx, "answer-"+id)
			pod := idle.podName(int32(i + 1))
			started := firstLogLine(ctx, ns, pod, "RESUME ")
			st := pods.of(pod)
			runs = append(runs, wakeRun{acked: acked, created: st.created, scheduled: st.scheduled, started: started, answered: answered})
			GinkgoWriter.Printf("wake %d: %v (%s)\n", i, answered.Sub(acked).Round(time.Millisecond), runs[len(runs)-1].stages())
		}
		report := summarizeWakes(runs)
		AddReportEntry("idle agent wake on the real node", report)
		GinkgoWriter.Println(report)
		Expect(idle.spec.Unchanged(4)).To(Succeed())
	})
}

// wakeRun is one wake's moments, all on this machine's clock.
type wakeRun struct {
	acked, created, scheduled, started, answered time.Time
}

// stage names and bounds: ack → pod created (the manager), → bound to the node (the
// scheduler), → the agent's first log line (the kubelet: sandbox, volumes, container), → its
// answer seen (the agent's append through the Session API, the harness's follow).
var wakeStages = []string{"manager", "scheduler", "kubelet", "agent"}

func (r wakeRun) durations() []time.Duration {
	return []time.Duration{r.created.Sub(r.acked), r.scheduled.Sub(r.created), r.started.Sub(r.scheduled), r.answered.Sub(r.started)}
}

func (r wakeRun) stages() string {
	parts := make([]string, len(wakeStages))
	for i, d := range r.durations() {
		parts[i] = fmt.Sprintf("%s %v", wakeStages[i], d.Round(time.Millisecond))
	}
	return strings.Join(parts, ", ")
}

// summarizeWakes: p50, p90, p99 and max of the whole wake, and each stage's median.
func summarizeWakes(runs []wakeRun) string {
	total := make([]time.Duration, len(runs))
	for i, r := range runs {
		total[i] = r.answered.Sub(r.acked)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d wakes, message acknowledged to the woken agent's answer: p50 %v, p90 %v, p99 %v, max %v\n",
		len(runs), nearestRank(total, 50), nearestRank(total, 90), nearestRank(total, 99), slices.Max(total).Round(time.Millisecond))
	fmt.Fprintf(&b, "stage medians:")
	for s, name := range wakeStages {
		d := make([]time.Duration, len(runs))
		for i, r := range runs {
			d[i] = r.durations()[s]
		}
		fmt.Fprintf(&b, " %s %v", name, nearestRank(d, 50))
	}
	return b.String()
}

// nearestRank is the p-th percentile of d by the nearest-rank method, rounded to milliseconds.
func nearestRank(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := max(int(math.Ceil(p/100*float64(len(s))))-1, 0)
	return s[i].Round(time.Millisecond)
}

// podStages are the moments the harness's watch first saw a pod created and bound to a node.
type podStages struct{ created, scheduled time.Time }

type podStageWatch struct {
	mu   sync.Mutex
	pods map[string]*podStages
}

// watchPodStages timestamps each pod of ns as the watch delivers it, until the spec ends.
func watchPodStages(ctx context.Context, ns string) *podStageWatch {
	w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	pw := &podStageWatch{pods: map[string]*podStages{}}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			now := time.Now()
			pw.mu.Lock()
			st := pw.pods[pod.Name]
			if st == nil {
				st = &podStages{created: now}
				pw.pods[pod.Name] = st
			}
			if st.scheduled.IsZero() && pod.Spec.NodeName != "" {
				st.scheduled = now
			}
			pw.mu.Unlock()
		}
	}()
	return pw
}

func (pw *podStageWatch) of(pod string) podStages {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	st := pw.pods[pod]
	Expect(st).NotTo(BeNil(), "the watch never saw pod %s", pod)
	Expect(st.scheduled.IsZero()).To(BeFalse(), "the watch never saw pod %s bound", pod)
	return *st
}

// firstLogLine is when the container wrote its first line starting with prefix (the
// runtime's timestamp of the line).
func firstLogLine(ctx context.Context, ns, pod, prefix string) time.Time {
	b, err := clientset.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Timestamps: true}).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred(), "logs of %s", pod)
	for line := range strings.Lines(string(b)) {
		at, text, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || !strings.HasPrefix(text, prefix) {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, at)
		Expect(err).NotTo(HaveOccurred())
		return t
	}
	Fail(fmt.Sprintf("no line %q in the log of %s:\n%s", prefix, pod, b))
	return time.Time{}
}

// answerFollow timestamps each message of a conversation as the harness's follow receives it.
type answerFollow struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func followAnswers(ctx context.Context, api *parleyclient.Client, ns, name string) *answerFollow {
	f := &answerFollow{seen: map[string]time.Time{}}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	DeferCleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		err := api.Follow(fctx, ns, name, 0, func(m conversation.Message) error {
			f.mu.Lock()
			f.seen[m.ID] = time.Now()
			f.mu.Unlock()
			return nil
		})
		if fctx.Err() == nil {
			GinkgoWriter.Printf("following %s/%s ended: %v\n", ns, name, err)
		}
	}()
	return f
}

// wait returns when the follow received the message id.
func (f *answerFollow) wait(ctx context.Context, id string) time.Time {
	var at time.Time
	Eventually(func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		at = f.seen[id]
		return !at.IsZero()
	}).WithContext(ctx).WithTimeout(podTimeout).WithPolling(5*time.Millisecond).Should(BeTrue(), "no message %s", id)
	return at
}
