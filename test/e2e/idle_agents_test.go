//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/bundle"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/test/support/specwatch"
)

// idleSuspendAfter is the idle specs' spec.agent.idle.suspendAfter: long enough to see the
// pod stay while the agent works, short enough to keep the specs quick.
const idleSuspendAfter = 3 * time.Second

// idleAgentSpecs are idle agents on the real node: the test agent in `answer` mode (it answers
// every user message, test/agent/answer.go) with spec.agent.idle, driven by the kubectl
// plugin as a person drives it. They run in the manager's Ordered container and carry the
// label idle-agents: go test -tags e2e ./test/e2e/ -ginkgo.label-filter=idle-agents.
func idleAgentSpecs(dynamicClient func() dynamic.Interface, manager func() *managerProcess) {
	It("suspends an agent that answered after suspendAfter, and kubectl parley send wakes it with the message in its bundle, without writing spec", Label("idle-agents"), func(ctx SpecContext) {
		idle, kp := startIdleAgent(ctx, dynamicClient(), manager(), "talker")

		By("kubectl parley send --wait: the agent answers")
		out, _, err := kp.run(ctx, "send", "talker", "hello", "--wait", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring(`You said "hello"; I know 1 messages of this conversation.`))
		answeredAt := time.Now()

		By("after suspendAfter its pod is deleted: AgentRunning=False Idle, no restart, no Crash Checkpoint")
		idle.waitAsleep(ctx, 1)
		Expect(time.Since(answeredAt)).To(BeNumerically(">=", idleSuspendAfter-time.Second), "suspended before suspendAfter passed")

		By("kubectl parley send --wait to the sleeping agent: it is woken and answers")
		out, errOut, err := kp.run(ctx, "send", "talker", "are you there?", "--wait", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred())
		Expect(errOut).To(ContainSubstring("was asleep (idle); this message wakes it"))
		Expect(out).To(ContainSubstring(`You said "are you there?"; I know 3 messages of this conversation.`))

		By("the new pod resumed (PARLEY_RESUME=true) from a bundle that ends with the message, and appended its answer")
		woken := idle.pod(ctx, 2)
		Expect(woken.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: agentpod.EnvResume, Value: "true"}))
		msgs := bundleMessages(ctx, woken)
		Expect(msgs).To(HaveLen(3))
		Expect(msgs[2].Role).To(Equal(conversation.RoleUser))
		Expect(msgs[2].Text()).To(Equal("are you there?"))
		log := podLog(ctx, idle.ns, woken.Name)
		Expect(log).To(ContainSubstring("RESUME resume=true attempt=1 bundleMessages=3"))
		By("the answer follows the message: the next sequence")
		m := regexp.MustCompile(`message (\S+) appended to \S+ at sequence (\d+)`).FindStringSubmatch(errOut)
		Expect(m).NotTo(BeNil(), "send printed no sequence: %s", errOut)
		seq, err := strconv.Atoi(m[2])
		Expect(err).NotTo(HaveOccurred())
		Expect(log).To(ContainSubstring(fmt.Sprintf("ANSWER answer-%s seq=%d", m[1], seq+1)))
		// status.history follows the appends through the activity hand-off: it catches up.
		Eventually(func() int64 { return historyMessages(idle.get(ctx)) }).
			WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Equal(int64(4)))
		Expect(agentInt(idle.get(ctx), "restarts")).To(BeZero())
		Eventually(func() int32 { return eventCount(ctx, idle.ns, "talker", "AgentWoken") }).
			WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Equal(int32(1)))
		Expect(eventCount(ctx, idle.ns, "talker", "AgentSuspended")).To(Equal(int32(1)))
		idle.noCheckpoints(ctx)

		By("the controller never wrote spec (a watch saw every version)")
		Expect(idle.spec.Unchanged(4)).To(Succeed())
	})

	It("runs kubectl parley chat in a real terminal (tmux) through the same cycle: answer, sleep, wake, answer, Ctrl-D", Label("idle-agents", "terminal"), func(ctx SpecContext) {
		term := newTmux()
		idle, kp := startIdleAgent(ctx, dynamicClient(), manager(), "chatty")

		By("starting kubectl parley chat in a tmux pane")
		term.start(kp.env(), append([]string{"kubectl"}, kp.args("chat", "chatty")...)...)
		term.waitFor(ctx, "Ctrl-D leaves")

		By("typing a message: the agent's answer appears in the terminal")
		term.typeLine("hello from tmux")
		term.waitFor(ctx, `You said "hello from tmux"; I know 1 messages of this conversation.`)

		By("the agent falls asleep while the chat stays open")
		idle.waitAsleep(ctx, 1)

		By("typing the next message wakes it, and its answer appears")
		term.typeLine("wake up")
		term.waitFor(ctx, "was asleep (idle); this message wakes it")
		term.waitFor(ctx, `You said "wake up"; I know 3 messages of this conversation.`)
		msgs := bundleMessages(ctx, idle.pod(ctx, 2))
		Expect(msgs).NotTo(BeEmpty())
		Expect(msgs[len(msgs)-1].Text()).To(Equal("wake up"), "the bundle of the woken pod ends with the message that woke it")

		By("Ctrl-D leaves the chat with exit status 0")
		term.ctrlD()
		Expect(term.exitStatus(ctx)).To(Equal(0), "pane:\n%s", term.screen())
		Expect(term.screen()).NotTo(ContainSubstring("Error"))
		Expect(agentInt(idle.get(ctx), "restarts")).To(BeZero())
		Expect(idle.spec.Unchanged(4)).To(Succeed())
	})
}

// idleAgent is a Conversation whose test agent answers and sleeps after idleSuspendAfter.
type idleAgent struct {
	convs    dynamic.ResourceInterface
	ns, name string
	spec     *specwatch.Watch
}

// startIdleAgent creates the Conversation in a new namespace whose default ServiceAccount
// holds the agent role, waits for its first pod to run, and returns it with the plugin acting
// as that ServiceAccount.
func startIdleAgent(ctx context.Context, dyn dynamic.Interface, m *managerProcess, name string) (*idleAgent, *kubectlParley) {
	ns := newNamespace(ctx)
	grantAgentRole(ctx, ns)
	idle := createIdleAgent(ctx, dyn, ns, name, idleSuspendAfter)
	kp := newKubectlParley(ctx, m, ns)
	idle.waitPodRunning(ctx, 1)
	return idle, kp
}

func createIdleAgent(ctx context.Context, dyn dynamic.Interface, ns, name string, suspendAfter time.Duration) *idleAgent {
	By(fmt.Sprintf("a Conversation whose test agent answers each user message, suspended after %s idle", suspendAfter))
	conv := agentConversation(name, "1s", agentContainer("answer"))
	Expect(unstructured.SetNestedField(conv.Object, suspendAfter.String(), "spec", "agent", "idle", "suspendAfter")).To(Succeed())
	convs := dyn.Resource(conversations).Namespace(ns)
	_, err := convs.Create(ctx, conv, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	w, err := specwatch.Start(ctx, dyn, conversations, ns, name)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	return &idleAgent{convs: convs, ns: ns, name: name, spec: w}
}

func (a *idleAgent) get(ctx context.Context) *unstructured.Unstructured {
	u, err := a.convs.Get(ctx, a.name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return u
}

func (a *idleAgent) podName(attempt int32) string { return agentpod.PodName(a.name, attempt) }

func (a *idleAgent) pod(ctx context.Context, attempt int32) *corev1.Pod {
	p, err := clientset.CoreV1().Pods(a.ns).Get(ctx, a.podName(attempt), metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return p
}

// waitPodRunning waits for the pod of attempt to run.
func (a *idleAgent) waitPodRunning(ctx context.Context, attempt int32) {
	Eventually(getPod(ctx, a.ns, a.podName(attempt))).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).
		Should(WithTransform(podPhase, Equal(corev1.PodRunning)), func() string { return describeRealAgent(ctx, a.ns, a.name, nil) })
}

// waitAsleep waits until the agent sleeps after attempt: AgentRunning=False Idle, its pod
// gone, the attempt kept, nothing counted as a crash, no Checkpoint.
func (a *idleAgent) waitAsleep(ctx context.Context, attempt int32) {
	var got *unstructured.Unstructured
	Eventually(func(g Gomega) {
		got = a.get(ctx)
		g.Expect(agentCondition(got)).To(SatisfyAll(HaveKeyWithValue("status", "False"), HaveKeyWithValue("reason", "Idle")))
		_, err := clientset.CoreV1().Pods(a.ns).Get(ctx, a.podName(attempt), metav1.GetOptions{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "pod %s: %v", a.podName(attempt), err)
	}).WithContext(ctx).WithTimeout(idleSuspendAfter+podTimeout).WithPolling(poll).Should(Succeed(),
		func() string { return describeRealAgent(ctx, a.ns, a.name, got) })
	Expect(agentInt(got, "attempt")).To(Equal(int64(attempt)))
	Expect(agentInt(got, "restarts")).To(BeZero())
	podName, _, _ := unstructured.NestedString(got.Object, "status", "agent", "podName")
	Expect(podName).To(BeEmpty())
	Expect(unstructured.NestedMap(got.Object, "status", "agent", "lastFailure")).To(BeNil())
	phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
	Expect(phase).To(Equal("Active"))
	a.noCheckpoints(ctx)
}

func (a *idleAgent) noCheckpoints(ctx context.Context) {
	ckpts, err := dynamic.NewForConfigOrDie(restConfig).Resource(checkpoints).Namespace(a.ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(ckpts.Items).To(BeEmpty(), "no Crash Checkpoint")
}

// bundleMessages reads the main thread of the resume bundle pod mounts (its ConfigMap).
func bundleMessages(ctx context.Context, pod *corev1.Pod) []conversation.Message {
	for _, v := range pod.Spec.Volumes {
		if v.Name != agentpod.VolumeBundle || v.ConfigMap == nil {
			continue
		}
		cm, err := clientset.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, item := range v.ConfigMap.Items {
			if item.Path != bundle.ConversationFile {
				continue
			}
			var m struct {
				State struct {
					Messages []conversation.Message `json:"messages"`
				} `json:"state"`
			}
			Expect(json.Unmarshal([]byte(cm.Data[item.Key]), &m)).To(Succeed())
			return m.State.Messages
		}
	}
	Fail(fmt.Sprintf("pod %s mounts no %s in a %s volume", pod.Name, bundle.ConversationFile, agentpod.VolumeBundle))
	return nil
}
