//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

var checkpoints = schema.GroupVersionResource{Group: "parley.dev", Version: "v1alpha1", Resource: "checkpoints"}

// agentRole is config/rbac's role for agents, applied as the file is (unprefixed: the suite
// does not install config/default).
const agentRole = "conversation-agent-role"

// agentRecoverySpecs are the agent pod's crashes on the real node: the controller runs the
// test agent's `converse` (test/agent/converse.go), which appends turns through the Session API
// of the suite's manager and fails at a turn in its first pod. They run in the manager's
// Ordered container and share its process; one of them restarts it. They carry the label
// agent-pods: go test -tags e2e ./test/e2e/ -ginkgo.label-filter=agent-pods runs them alone.
func agentRecoverySpecs(dynamicClient func() dynamic.Interface, manager func() *managerProcess) {
	convs := func(ns string) dynamic.ResourceInterface {
		return dynamicClient().Resource(conversations).Namespace(ns)
	}
	get := func(ctx context.Context, ns, name string) *unstructured.Unstructured {
		u, err := convs(ns).Get(ctx, name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		return u
	}
	create := func(ctx context.Context, ns string, conv *unstructured.Unstructured) {
		_, err := convs(ns).Create(ctx, conv, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	waitCompleted := func(ctx context.Context, ns, name string, restarts int64, timeout time.Duration) *unstructured.Unstructured {
		return waitAgentCompleted(ctx, convs(ns), ns, name, restarts, timeout)
	}

	It("restarts an agent that exits 1 mid-conversation in a new pod with PARLEY_RESUME=true and its bundle, and the agent continues the same sequence", Label("agent-pods"), func(ctx SpecContext) {
		ns := newNamespace(ctx)
		grantAgentRole(ctx, ns)

		By("a Conversation whose agent converses four turns and exits 1 in the middle of the third")
		create(ctx, ns, agentConversation("crashy", "1s", agentContainer("converse", "-turns", "4", "-crash-at-turn", "3")))

		got := waitCompleted(ctx, ns, "crashy", 1, podTimeout)
		failure, _, _ := unstructured.NestedMap(got.Object, "status", "agent", "lastFailure")
		Expect(failure).To(HaveKeyWithValue("reason", "Error"))
		Expect(failure).To(HaveKeyWithValue("exitCode", int64(1)))
		Expect(failure).To(HaveKeyWithValue("podName", "crashy-agent-1"))
		Expect(failure).To(HaveKeyWithValue("turn", int64(3)))
		Expect(historyMessages(got)).To(Equal(int64(8)), "u1 a1 u2 a2 u3 a3 u4 a4: the retried u3 stored once")

		first := podLog(ctx, ns, "crashy-agent-1")
		second := podLog(ctx, ns, "crashy-agent-2")
		Expect(first).To(ContainSubstring("RESUME resume=false attempt=0 checkpoint= bundleMessages=0"))
		Expect(first).To(ContainSubstring("CRASH exit at turn 3"))
		By("the new pod's bundle holds every acknowledged message up to the last complete turn")
		Expect(second).To(ContainSubstring("RESUME resume=true attempt=1 checkpoint=crashy-crash-1 bundleMessages=4 bundleTurns=2 last=a2"))
		By("its appends continue the sequence: u3 is the same message (same id, same sequence), a3 follows it")
		u3 := appendedSeq(first, "u3")
		Expect(appendedSeq(second, "u3")).To(Equal(u3))
		Expect(appendedSeq(second, "a3")).To(Equal(u3 + 1))
		Expect(appendedSeq(second, "a4")).To(Equal(u3 + 3))
	})

	It("records an agent the kernel kills at its memory limit as OOMKilled and resumes it", Label("agent-pods"), func(ctx SpecContext) {
		ns := newNamespace(ctx)
		grantAgentRole(ctx, ns)

		By("a Conversation whose agent has a 32Mi memory limit and allocates past it in its second turn")
		c := agentContainer("converse", "-turns", "3", "-crash-at-turn", "2", "-crash", "oom")
		c["resources"] = map[string]any{"limits": map[string]any{"memory": "32Mi"}}
		create(ctx, ns, agentConversation("greedy", "1s", c))

		got := waitCompleted(ctx, ns, "greedy", 1, podTimeout)
		By("lastFailure says what the kubelet reported: OOMKilled, exit code 137 (SIGKILL)")
		failure, _, _ := unstructured.NestedMap(got.Object, "status", "agent", "lastFailure")
		Expect(failure).To(HaveKeyWithValue("reason", "OOMKilled"))
		Expect(failure).To(HaveKeyWithValue("exitCode", int64(137)))
		Expect(failure).To(HaveKeyWithValue("podName", "greedy-agent-1"))
		Expect(failure).To(HaveKeyWithValue("turn", int64(2)))
		pod, err := clientset.CoreV1().Pods(ns).Get(ctx, "greedy-agent-1", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.Status.ContainerStatuses).To(ConsistOf(HaveField("State.Terminated.Reason", "OOMKilled")))

		Expect(podLog(ctx, ns, "greedy-agent-1")).To(ContainSubstring("CRASH oom at turn 2"))
		Expect(podLog(ctx, ns, "greedy-agent-2")).To(ContainSubstring("RESUME resume=true attempt=1 checkpoint=greedy-crash-1 bundleMessages=2 bundleTurns=1 last=a1"))
		Expect(historyMessages(got)).To(Equal(int64(6)))
	})

	It("records an agent pod deleted while it runs as Deleted and resumes it", Label("agent-pods"), func(ctx SpecContext) {
		ns := newNamespace(ctx)
		grantAgentRole(ctx, ns)

		By("a Conversation whose agent hangs in its second turn")
		create(ctx, ns, agentConversation("doomed", "1s", agentContainer("converse", "-turns", "3", "-crash-at-turn", "2", "-crash", "hang")))
		Eventually(func(g Gomega) {
			b, err := clientset.CoreV1().Pods(ns).GetLogs("doomed-agent-1", &corev1.PodLogOptions{}).DoRaw(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(b)).To(ContainSubstring("CRASH hang at turn 2"))
		}).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).Should(Succeed(),
			func() string { return describePod(ctx, ns, "doomed-agent-1") })

		By("deleting its pod, as kubectl delete pod does")
		Expect(clientset.CoreV1().Pods(ns).Delete(ctx, "doomed-agent-1", metav1.DeleteOptions{})).To(Succeed())

		got := waitCompleted(ctx, ns, "doomed", 1, podTimeout)
		failure, _, _ := unstructured.NestedMap(got.Object, "status", "agent", "lastFailure")
		Expect(failure).To(HaveKeyWithValue("reason", "Deleted"))
		Expect(failure).To(HaveKeyWithValue("podName", "doomed-agent-1"))
		Expect(failure).To(HaveKeyWithValue("turn", int64(2)))
		Expect(podLog(ctx, ns, "doomed-agent-2")).To(ContainSubstring("RESUME resume=true attempt=1 checkpoint=doomed-crash-1 bundleMessages=2 bundleTurns=1 last=a1"))
		Expect(historyMessages(got)).To(Equal(int64(6)))
	})

	It("keeps an agent that exited 0 Completed when its finished pod is deleted afterwards", Label("agent-pods"), func(ctx SpecContext) {
		ns := newNamespace(ctx)
		grantAgentRole(ctx, ns)

		By("a Conversation whose agent converses two turns and exits 0")
		create(ctx, ns, agentConversation("finished", "1s", agentContainer("converse", "-turns", "2")))
		waitCompleted(ctx, ns, "finished", 0, podTimeout)

		By("deleting the finished pod, as people clean up completed pods")
		Expect(clientset.CoreV1().Pods(ns).Delete(ctx, "finished-agent-1", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := clientset.CoreV1().Pods(ns).Get(ctx, "finished-agent-1", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).Should(BeTrue())

		By("nothing crashed: no failure recorded, no restart (the backoff is 1 s)")
		var got *unstructured.Unstructured
		Consistently(func(g Gomega) {
			got = get(ctx, ns, "finished")
			g.Expect(agentReason(got)).To(Equal("Completed"))
			g.Expect(agentInt(got, "restarts")).To(BeZero())
			g.Expect(unstructured.NestedMap(got.Object, "status", "agent", "lastFailure")).To(BeNil())
			_, err := clientset.CoreV1().Pods(ns).Get(ctx, "finished-agent-2", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "pod finished-agent-2: %v", err)
		}).WithContext(ctx).WithTimeout(5*time.Second).WithPolling(500*time.Millisecond).Should(Succeed(),
			func() string { return describeAgent(ctx, ns, "finished", got) })
	})

	It("completes a recovery exactly once when the manager is killed while the restart waits out its backoff", Label("agent-pods"), func(ctx SpecContext) {
		ns := newNamespace(ctx)
		grantAgentRole(ctx, ns)

		// 30 s of backoff outlasts the new manager's wait for the dead one's lease (15 s).
		By("a Conversation whose agent exits 1 in its second turn, restarted after 30 s")
		create(ctx, ns, agentConversation("phoenix", "30s", agentContainer("converse", "-turns", "3", "-crash-at-turn", "2")))

		var recorded *unstructured.Unstructured
		Eventually(func(g Gomega) {
			u, err := convs(ns).Get(ctx, "phoenix", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			recorded = u
			g.Expect(agentReason(u)).To(Equal("RestartScheduled"))
		}).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).Should(Succeed(),
			func() string { return describeAgent(ctx, ns, "phoenix", recorded) })

		By("killing the manager (SIGKILL) as soon as the crash is recorded")
		manager().kill()
		killedAt := time.Now()
		failedAt, _, _ := unstructured.NestedString(recorded.Object, "status", "agent", "lastFailure", "time")
		Expect(recorded.Object).To(HaveKeyWithValue("status", HaveKeyWithValue("agent", SatisfyAll(
			HaveKeyWithValue("attempt", int64(1)),
			HaveKeyWithValue("lastFailure", HaveKeyWithValue("podName", "phoenix-agent-1")),
		))))
		nextStart, _, _ := unstructured.NestedString(recorded.Object, "status", "agent", "nextStartAt")
		nextStartAt, err := time.Parse(time.RFC3339, nextStart)
		Expect(err).NotTo(HaveOccurred())
		Expect(killedAt).To(BeTemporally("<", nextStartAt), "the restart must still be pending when the manager dies")

		By("starting a new manager process")
		manager().start()

		got := waitCompleted(ctx, ns, "phoenix", 1, podTimeout+30*time.Second)
		By("the crash was recorded once: the same lastFailure, one Crash Checkpoint, one restart event")
		failedAgain, _, _ := unstructured.NestedString(got.Object, "status", "agent", "lastFailure", "time")
		Expect(failedAgain).To(Equal(failedAt))
		Expect(agentInt(got, "attempt")).To(Equal(int64(2)))
		ckpts, err := dynamicClient().Resource(checkpoints).Namespace(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ckpts.Items).To(ConsistOf(HaveField("Object", SatisfyAll(
			HaveKeyWithValue("metadata", HaveKeyWithValue("name", "phoenix-crash-1")),
			HaveKeyWithValue("status", HaveKeyWithValue("phase", "Ready")),
		))))
		Expect(eventCount(ctx, ns, "phoenix", "AgentRestarted")).To(Equal(int32(1)))

		By("exactly one pod of attempt 2, made by the new manager after the backoff, and none of attempt 3")
		pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "parley.dev/conversation=phoenix"})
		Expect(err).NotTo(HaveOccurred())
		Expect(pods.Items).To(ConsistOf(HaveField("Name", "phoenix-agent-1"), HaveField("Name", "phoenix-agent-2")))
		second, err := clientset.CoreV1().Pods(ns).Get(ctx, "phoenix-agent-2", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(second.Labels).To(HaveKeyWithValue("parley.dev/attempt", "2"))
		// creationTimestamp has whole seconds: compare at that precision.
		Expect(second.CreationTimestamp.Time).To(BeTemporally(">=", nextStartAt.Truncate(time.Second)))
		Expect(podLog(ctx, ns, "phoenix-agent-2")).To(ContainSubstring("RESUME resume=true attempt=1 checkpoint=phoenix-crash-1 bundleMessages=2 bundleTurns=1 last=a1"))
		Expect(historyMessages(got)).To(Equal(int64(6)))
		Consistently(func(g Gomega) {
			_, err := clientset.CoreV1().Pods(ns).Get(ctx, "phoenix-agent-3", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "pod phoenix-agent-3: %v", err)
			g.Expect(agentInt(get(ctx, ns, "phoenix"), "restarts")).To(Equal(int64(1)))
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("expires a session on time after a manager restart: the new manager rebuilds the expiry timer from status (no periodic scan)", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		// 45 s outlasts the new manager's wait for the dead one's lease (15 s): the session must
		// expire under the new process, from a timer it can only have rebuilt from status.
		create(ctx, ns, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "parley.dev/v1alpha1", "kind": "Conversation",
			"metadata": map[string]any{"name": "timer"},
			"spec": map[string]any{
				"history":  map[string]any{"configMap": map[string]any{}},
				"lifetime": map[string]any{"ttl": "45s"},
			},
		}})
		var expiresAt time.Time
		Eventually(func(g Gomega) {
			u := get(ctx, ns, "timer")
			at, _, _ := unstructured.NestedString(u.Object, "status", "expiresAt")
			t, err := time.Parse(time.RFC3339, at)
			g.Expect(err).NotTo(HaveOccurred())
			expiresAt = t
		}).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).Should(Succeed())

		By("killing the manager (SIGKILL) and starting a new process long before expiresAt")
		manager().kill()
		Expect(time.Now()).To(BeTemporally("<", expiresAt.Add(-20*time.Second)), "the machine was too slow for this spec's margin")
		manager().start()

		By("the session expires at expiresAt, under the new manager")
		var expiredAt time.Time
		Eventually(func(g Gomega) {
			u := get(ctx, ns, "timer")
			phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			g.Expect(phase).To(Equal("Expired"))
			expiredAt = time.Now()
		}).WithContext(ctx).WithTimeout(time.Until(expiresAt)+30*time.Second).WithPolling(poll).Should(Succeed(),
			"the new manager did not expire the session: was the timer rebuilt from status.expiresAt?")
		Expect(expiredAt).To(BeTemporally(">=", expiresAt), "never expired early")
		GinkgoWriter.Printf("expired %v after expiresAt under the restarted manager\n", expiredAt.Sub(expiresAt))
	})

	It("fails over to a standby replica when the leader is killed: the standby reconciles new Conversations and keeps the old ones' expiry timers", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		leader := manager()
		By("a second manager process, standing by for the lease")
		probe, err := net.Listen("tcp", bridgeAddress+":0")
		Expect(err).NotTo(HaveOccurred())
		standby := &managerProcess{bin: leader.bin, kubeconfig: leader.kubeconfig, logPath: leader.logPath + ".standby", apiAddr: probe.Addr().String()}
		Expect(probe.Close()).To(Succeed())
		standby.start()
		DeferCleanup(func() {
			// Hand the lease back: the standby releases it on SIGTERM, the first process takes it.
			standby.stop()
			if leader.cmd == nil {
				leader.start()
			}
		})

		conversation := func(name, ttl string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "parley.dev/v1alpha1", "kind": "Conversation",
				"metadata": map[string]any{"name": name},
				"spec": map[string]any{
					"history":  map[string]any{"configMap": map[string]any{}},
					"lifetime": map[string]any{"ttl": ttl},
				},
			}}
		}
		phase := func(name string) func() string {
			return func() string {
				p, _, _ := unstructured.NestedString(get(ctx, ns, name).Object, "status", "phase")
				return p
			}
		}
		create(ctx, ns, conversation("before", "50s"))
		Eventually(phase("before")).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).Should(Equal("Active"))
		at, _, _ := unstructured.NestedString(get(ctx, ns, "before").Object, "status", "expiresAt")
		expiresAt, err := time.Parse(time.RFC3339, at)
		Expect(err).NotTo(HaveOccurred())

		By("killing the leader (SIGKILL: the lease is not released)")
		leader.kill()
		create(ctx, ns, conversation("after", "1h"))
		Eventually(phase("after")).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).Should(Equal("Active"),
			"the standby did not take over: see e2e-manager.log.standby")
		Eventually(phase("before")).WithContext(ctx).WithTimeout(time.Until(expiresAt)+30*time.Second).WithPolling(poll).Should(Equal("Expired"),
			"the standby did not expire the session the dead leader had timed")
		Expect(time.Now()).To(BeTemporally(">=", expiresAt))
	})

	It("reports an agent image that cannot be pulled as ImagePullFailed without spending a restart, and replaces the pod when the template is fixed", Label("agent-pods"), func(ctx SpecContext) {
		ns := newNamespace(ctx)
		grantAgentRole(ctx, ns)

		By("a Conversation whose agent image does not exist on the node (imagePullPolicy Never)")
		bad := agentContainer("converse", "-turns", "2")
		bad["image"] = "localhost/parley-no-such-agent:dev"
		create(ctx, ns, agentConversation("unpullable", "1s", bad))

		var got *unstructured.Unstructured
		Eventually(func(g Gomega) {
			u, err := convs(ns).Get(ctx, "unpullable", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			got = u
			g.Expect(agentReason(u)).To(Equal("ImagePullFailed"))
		}).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).Should(Succeed(),
			func() string { return describeAgent(ctx, ns, "unpullable", got) })
		Expect(agentCondition(got)).To(SatisfyAll(
			HaveKeyWithValue("status", "False"),
			HaveKeyWithValue("message", ContainSubstring("ErrImageNeverPull"))))
		// The recorder sends events after the status write, asynchronously: wait for it.
		Eventually(func() int32 { return eventCount(ctx, ns, "unpullable", "AgentNotStarted") }).
			WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(BeNumerically(">=", 1))

		By("no restart is spent while the kubelet keeps failing to pull")
		Consistently(func(g Gomega) {
			u := get(ctx, ns, "unpullable")
			g.Expect(agentReason(u)).To(Equal("ImagePullFailed"))
			g.Expect(agentInt(u, "restarts")).To(BeZero())
			g.Expect(agentInt(u, "attempt")).To(Equal(int64(1)))
			g.Expect(unstructured.NestedMap(u.Object, "status", "agent", "lastFailure")).To(BeNil())
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("fixing the image: the blocked pod is replaced and the agent runs to completion, still without a restart")
		fixed := fmt.Sprintf(`{"spec":{"agent":{"template":{"spec":{"containers":[{"name":"agent","image":%q,"imagePullPolicy":"Never","args":["converse","-turns","2"]}]}}}}}`, agentImage)
		_, err := convs(ns).Patch(ctx, "unpullable", types.MergePatchType, []byte(fixed), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		got = waitCompleted(ctx, ns, "unpullable", 0, podTimeout)
		Expect(agentInt(got, "attempt")).To(Equal(int64(2)))
		Expect(unstructured.NestedMap(got.Object, "status", "agent", "lastFailure")).To(BeNil())
		Expect(historyMessages(got)).To(Equal(int64(4)))
	})
}

// waitAgentCompleted waits for a Conversation's agent to end with exit 0 after the given
// number of restarts.
func waitAgentCompleted(ctx context.Context, convs dynamic.ResourceInterface, ns, name string, restarts int64, timeout time.Duration) *unstructured.Unstructured {
	var got *unstructured.Unstructured
	Eventually(func(g Gomega) {
		u, err := convs.Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		got = u
		g.Expect(agentInt(u, "restarts")).To(Equal(restarts))
		g.Expect(agentReason(u)).To(Equal("Completed"))
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed(),
		func() string { return describeAgent(ctx, ns, name, got) })
	return got
}

// agentContainer is the test agent's container with the given arguments.
func agentContainer(args ...string) map[string]any {
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	return map[string]any{"name": "agent", "image": agentImage, "imagePullPolicy": "Never", "args": a}
}

// agentConversation is a Conversation with its history in ConfigMaps whose agent pod runs
// container, restarted after backoffInitial (doubling up to a minute).
func agentConversation(name, backoffInitial string, container map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "parley.dev/v1alpha1",
		"kind":       "Conversation",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"history": map[string]any{"configMap": map[string]any{}},
			"agent": map[string]any{
				"backoff": map[string]any{"initial": backoffInitial, "max": "1m"},
				"template": map[string]any{"spec": map[string]any{
					"terminationGracePeriodSeconds": int64(5),
					"containers":                    []any{container},
				}},
			},
		},
	}}
}

// grantAgentRole applies config/rbac's agent role as it is shipped and binds it to the
// namespace's default ServiceAccount, which agent pods run as: the agent may append through
// the Session API.
func grantAgentRole(ctx context.Context, ns string) {
	By("binding config/rbac's " + agentRole + " to the namespace's default ServiceAccount")
	_, err := kubectl(ctx, "", "apply", "-f", "config/rbac/conversation_agent_role.yaml")
	Expect(err).NotTo(HaveOccurred())
	_, err = clientset.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "parley-agent"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: agentRole},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// agentCondition is the Conversation's AgentRunning condition (nil without one).
func agentCondition(u *unstructured.Unstructured) map[string]any {
	return conditionOf(u, "AgentRunning")
}

func agentReason(u *unstructured.Unstructured) string { return conditionReason(u, "AgentRunning") }

// agentInt reads an integer of status.agent (0 when absent).
func agentInt(u *unstructured.Unstructured, field string) int64 {
	n, _, _ := unstructured.NestedInt64(u.Object, "status", "agent", field)
	return n
}

func historyMessages(u *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(u.Object, "status", "history", "messages")
	return n
}

// eventCount sums the events of the given reason about a Conversation (a repeated event is
// one object with a count).
func eventCount(ctx context.Context, ns, conv, reason string) int32 {
	events, err := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.name", conv),
		fields.OneTermEqualSelector("involvedObject.kind", "Conversation"),
		fields.OneTermEqualSelector("reason", reason),
	).String()})
	Expect(err).NotTo(HaveOccurred())
	var n int32
	for _, e := range events.Items {
		n += max(e.Count, 1)
	}
	return n
}

// describeAgent is what a failed wait prints: the Conversation's status.agent and AgentRunning
// condition, and the state of each of its pods.
func describeAgent(ctx context.Context, ns, conv string, u *unstructured.Unstructured) string {
	s := ""
	if u != nil {
		agent, _, _ := unstructured.NestedMap(u.Object, "status", "agent")
		s = fmt.Sprintf("status.agent: %v\nAgentRunning: %v\n", agent, agentCondition(u))
	}
	pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "parley.dev/conversation=" + conv})
	if err != nil {
		return s + err.Error()
	}
	for _, p := range pods.Items {
		s += describePod(ctx, ns, p.Name)
	}
	return s + "manager log: e2e-manager.log in the cluster's log folder"
}

func podLog(ctx context.Context, ns, name string) string {
	b, err := clientset.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred(), "logs of %s/%s", ns, name)
	return string(b)
}

// appendedSeq reads "APPEND <id> seq=N" from the test agent's log.
func appendedSeq(log, id string) int {
	m := regexp.MustCompile(`APPEND ` + regexp.QuoteMeta(id) + ` seq=(\d+)`).FindStringSubmatch(log)
	Expect(m).NotTo(BeNil(), "no append of %s in:\n%s", id, log)
	n, err := strconv.Atoi(m[1])
	Expect(err).NotTo(HaveOccurred())
	return n
}
