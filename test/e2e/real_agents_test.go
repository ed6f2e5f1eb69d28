//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/parley-dev/parley/test/stubmodel"
)

// realAgent is one reference agent of examples/: a real framework in its image, run from the
// example's own manifest against the stub model.
type realAgent struct {
	// example is the folder under examples/ (and the image localhost/parley-example-<example>).
	example string
	// conversation is the name the example's manifest gives its Conversation.
	conversation string
	// script is what the stub model answers (realAgentScript, or a variant for the framework's tools).
	script []stubmodel.Reply
	// modelURL is the environment variable that points the framework at its model API, and
	// the path after the stub's address.
	modelURL, modelPath string
	// resumed is the conversation the first model request after the crash must carry.
	resumed []stubmodel.Entry
}

// The conversation every reference agent has, whatever its framework: three prompts (the
// example's args), a tool call in the first turn, and the third turn held by the stub until
// the test kills the agent's container, then answered to the new pod.
var (
	realAgentPrompts = []string{"What is the weather in Paris?", "And in Rome?", "Which of the two is warmer?"}
	realAgentScript  = []stubmodel.Reply{
		{ToolCalls: []stubmodel.ToolCall{{ID: "call_paris", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)}}},
		{Text: "Paris: 18°C and sunny."},
		{Text: "Rome is warm as well."},
		{Hold: true},
		{Text: "They are the same."},
	}
	weatherResult = "18°C and sunny in Paris"
	// historyRoles are the Conversation's messages at the end, whatever the framework: u1, the
	// tool call, its result, a1, u2, a2, u3 (once, though the crash made the agent ask it
	// again), a3.
	historyRoles = []string{"user", "assistant", "tool", "assistant", "user", "assistant", "user", "assistant"}
)

// resumedConversation is what the first model request after the crash carries: the two
// complete turns, the first with its tool call and result, then the interrupted prompt. Only
// the tool and the role of its result (Anthropic's user, OpenAI's tool) differ by framework.
func resumedConversation(tool, callID, resultRole string) []stubmodel.Entry {
	return []stubmodel.Entry{
		{Role: "user", Kind: stubmodel.KindText, Text: realAgentPrompts[0]},
		{Role: "assistant", Kind: stubmodel.KindToolUse, Name: tool, CallID: callID},
		{Role: resultRole, Kind: stubmodel.KindToolResult, CallID: callID, Text: weatherResult},
		{Role: "assistant", Kind: stubmodel.KindText, Text: "Paris: 18°C and sunny."},
		{Role: "user", Kind: stubmodel.KindText, Text: realAgentPrompts[1]},
		{Role: "assistant", Kind: stubmodel.KindText, Text: "Rome is warm as well."},
		{Role: "user", Kind: stubmodel.KindText, Text: realAgentPrompts[2]},
	}
}

// openAIResumed is the conversation through an OpenAI API (Responses or Chat Completions).
var openAIResumed = resumedConversation("get_weather", "call_paris", "tool")

var realAgents = []realAgent{{
	example:      "openai-agents",
	conversation: "openai-agent",
	script:       realAgentScript,
	modelURL:     "OPENAI_BASE_URL", modelPath: "/v1",
	resumed: openAIResumed,
}, {
	example:      "langgraph",
	conversation: "langgraph-agent",
	script:       realAgentScript,
	modelURL:     "OPENAI_BASE_URL", modelPath: "/v1",
	resumed: openAIResumed,
}, {
	example:      "claude-agent-sdk",
	conversation: "claude-sdk-agent",
	script:       claudeScript,
	modelURL:     "ANTHROPIC_BASE_URL",
	resumed:      claudeResumed,
}, {
	example:      "claude-code",
	conversation: "claude-code-agent",
	script:       claudeScript,
	modelURL:     "ANTHROPIC_BASE_URL",
	resumed:      claudeResumed,
}}

// Claude's agents call their own Read tool on the weather.txt their image holds.
var (
	claudeScript = append([]stubmodel.Reply{
		{ToolCalls: []stubmodel.ToolCall{{ID: "toolu_paris", Name: "Read", Input: json.RawMessage(`{"file_path":"/app/weather.txt"}`)}}},
	}, realAgentScript[1:]...)
	claudeResumed = resumedConversation("Read", "toolu_paris", "user")
)

// withoutAgentContext is a request's conversation as the specs compare it: without the context Claude
// Code adds to user messages (<system-reminder> blocks), and a tool result that holds the
// weather as that result alone (Claude's Read numbers the file's lines).
func withoutAgentContext(conv []stubmodel.Entry) []stubmodel.Entry {
	out := make([]stubmodel.Entry, 0, len(conv))
	for _, e := range conv {
		if strings.HasPrefix(e.Text, "<system-reminder>") {
			continue
		}
		if e.Kind == stubmodel.KindToolResult && strings.Contains(e.Text, weatherResult) {
			e.Text = weatherResult
		}
		out = append(out, e)
	}
	return out
}

// realAgentSpecs run each reference agent on the real node: it converses, its container is
// SIGKILLed in the middle of its third turn, the controller starts a new pod, and the agent
// resumes with its framework's own mechanism. They run in the manager's Ordered container and
// carry the label real-agents: go test -tags e2e ./test/e2e/ -ginkgo.label-filter=real-agents.
//
// With PARLEY_AGENT_CRASHES=N set, a benchmark (label real-agents-bench) runs N crashes of
// each agent (or of the examples PARLEY_AGENT_BENCH names, comma-separated) and reports the
// crash to first model request of the resumed agent (docs/benchmarks.md); without it, it skips.
func realAgentSpecs(dynamicClient func() dynamic.Interface, manager func() *managerProcess) {
	apiAddr = func() string { return manager().apiAddr }
	for _, agent := range realAgents {
		It("resumes the "+agent.example+" example after its container is SIGKILLed mid-turn, and its first model request carries every earlier message once, in order", Label("real-agents"), func(ctx SpecContext) {
			buildExampleImage(ctx, agent.example)
			took := crashAndResume(ctx, dynamicClient(), agent)
			GinkgoWriter.Printf("%s: crash to first model request of the resumed agent: %v\n", agent.example, took)
		})
	}

	It("measures the crash to the resumed agent's first model request, per framework", Label("real-agents-bench"), func(ctx SpecContext) {
		crashes, _ := strconv.Atoi(os.Getenv("PARLEY_AGENT_CRASHES"))
		if crashes <= 0 {
			Skip("set PARLEY_AGENT_CRASHES=N to run N crashes of each reference agent")
		}
		only := strings.Split(os.Getenv("PARLEY_AGENT_BENCH"), ",")
		for _, agent := range realAgents {
			if only[0] != "" && !slices.Contains(only, agent.example) {
				continue
			}
			buildExampleImage(ctx, agent.example)
			took := make([]time.Duration, crashes)
			for i := range took {
				took[i] = crashAndResume(ctx, dynamicClient(), agent)
			}
			slices.Sort(took)
			report := fmt.Sprintf("%s: %d crashes, crash to first model request p50 %v, min %v, max %v",
				agent.example, crashes, took[len(took)/2].Round(time.Millisecond),
				took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
			AddReportEntry(agent.example, report)
			GinkgoWriter.Println(report)
		}
	})
}

// buildExampleImage builds and imports localhost/parley-example-<example> (cached by content).
func buildExampleImage(ctx context.Context, example string) {
	By("building and importing the example's image (hack/agent-images.sh " + example + ")")
	images := exec.CommandContext(ctx, filepath.Join(repoRoot, "hack", "agent-images.sh"), example)
	images.Dir, images.Stdout, images.Stderr = repoRoot, GinkgoWriter, GinkgoWriter
	Expect(images.Run()).To(Succeed())
}

// crashAndResume runs the agent from its example's manifest in a new namespace, kills its
// container in the third turn, checks the resume, and returns the time from the kill to the
// resumed agent's first model request.
func crashAndResume(ctx context.Context, dyn dynamic.Interface, agent realAgent) time.Duration {
	ns := newNamespace(ctx)
	grantAgentRole(ctx, ns)
	stub := startStubModel(agent.script)

	By("applying the example's manifest, its model pointed at the stub and its pod run as the namespace's default ServiceAccount")
	conv := exampleConversation(agent.example)
	Expect(conv.GetName()).To(Equal(agent.conversation))
	setContainerEnv(conv, agent.modelURL, "http://"+stub.addr+agent.modelPath)
	unstructured.RemoveNestedField(conv.Object, "spec", "agent", "template", "spec", "serviceAccountName")
	convs := dyn.Resource(conversations).Namespace(ns)
	_, err := convs.Create(ctx, conv, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())

	By("waiting for the third turn's model request, which the stub holds")
	held := 0
	Eventually(func(g Gomega) {
		for _, r := range stub.Requests() {
			if r.Held {
				held = r.Seq
			}
		}
		g.Expect(held).NotTo(BeZero(), "requests so far: %d", len(stub.Requests()))
	}).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).Should(Succeed(),
		func() string { return describeRealAgent(ctx, ns, agent.conversation, nil) })

	first := agent.conversation + "-agent-1"
	By("SIGKILLing the agent's container " + first + " in the middle of the turn")
	killedAt := time.Now()
	killContainer(ctx, ns, first)

	got := waitAgentCompleted(ctx, convs, ns, agent.conversation, 1, podTimeout)
	GinkgoWriter.Print(describeRealAgent(ctx, ns, agent.conversation, nil))
	failure, _, _ := unstructured.NestedMap(got.Object, "status", "agent", "lastFailure")
	Expect(failure).To(HaveKeyWithValue("exitCode", int64(137)))
	Expect(failure).To(HaveKeyWithValue("podName", first))

	By("a Crash Checkpoint was taken and is Ready")
	ckpt, err := dyn.Resource(checkpoints).Namespace(ns).Get(ctx, agent.conversation+"-crash-1", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(ckpt.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("reason", "Crash")))
	Expect(ckpt.Object).To(HaveKeyWithValue("status", HaveKeyWithValue("phase", "Ready")))

	By("the first model request after the crash carries every earlier message once, in order")
	requests := stub.Requests()
	Expect(len(requests)).To(BeNumerically(">", held), "no model request after the crash")
	resumed := requests[held] // Seq counts from 1: this is the request after the held one.
	Expect(resumed.Time).To(BeTemporally(">", killedAt))
	Expect(withoutAgentContext(resumed.Conversation)).To(Equal(agent.resumed), "request body: %s", resumed.Body)

	By("the history holds each message once")
	var page struct {
		Messages []struct {
			ID   string `json:"id"`
			Role string `json:"role"`
		} `json:"messages"`
	}
	Expect(json.Unmarshal(sessionAPIGet(ctx, apiAddr(), ns, agent.conversation, "/messages"), &page)).To(Succeed())
	ids := map[string]int{}
	for _, m := range page.Messages {
		ids[m.ID]++
	}
	roles := make([]string, len(page.Messages))
	for i, m := range page.Messages {
		roles[i] = m.Role
	}
	Expect(roles).To(Equal(historyRoles), "GET …/messages: %+v", page.Messages)
	Expect(ids).To(HaveLen(len(page.Messages)), "a message id appears twice: %v", ids)
	Expect(historyMessages(got)).To(Equal(int64(len(historyRoles))))
	return resumed.Time.Sub(killedAt)
}

// apiAddr is the Session API's address (the suite's manager process).
var apiAddr func() string

// sessionAPIGet reads a Conversation's path of the Session API with a token of the namespace's
// default ServiceAccount (which holds the agent role).
func sessionAPIGet(ctx context.Context, addr, ns, conv, path string) []byte {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/namespaces/"+ns+"/conversations/"+conv+path, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+sessionToken(ctx, ns))
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s: %s", path, b)
	return b
}

// stubModel is the stub model served on the pod network's bridge, where agent pods reach it.
type stubModel struct {
	*stubmodel.Server
	addr string
}

func startStubModel(script []stubmodel.Reply) *stubModel {
	s, err := stubmodel.New(script, time.Now)
	Expect(err).NotTo(HaveOccurred())
	l, err := net.Listen("tcp", bridgeAddress+":0")
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			GinkgoWriter.Printf("stub model: %v\n", err)
		}
	}()
	DeferCleanup(func() {
		s.Close()
		_ = srv.Close()
	})
	return &stubModel{Server: s, addr: l.Addr().String()}
}

// exampleConversation reads examples/<example>/conversation.yaml.
func exampleConversation(example string) *unstructured.Unstructured {
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", example, "conversation.yaml"))
	Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal(b, &u.Object)).To(Succeed())
	return u
}

// setContainerEnv sets an environment variable the manifest's agent container already has.
func setContainerEnv(conv *unstructured.Unstructured, name, value string) {
	containers, _, _ := unstructured.NestedSlice(conv.Object, "spec", "agent", "template", "spec", "containers")
	Expect(containers).NotTo(BeEmpty())
	c := containers[0].(map[string]any)
	env, _ := c["env"].([]any)
	found := false
	for _, e := range env {
		if m := e.(map[string]any); m["name"] == name {
			m["value"], found = value, true
		}
	}
	Expect(found).To(BeTrue(), "the manifest's container has no %s", name)
	Expect(unstructured.SetNestedSlice(conv.Object, containers, "spec", "agent", "template", "spec", "containers")).To(Succeed())
}

// killContainer sends SIGKILL to a pod's running container through the node's containerd, as
// the kernel's OOM killer or a node problem would end it: no signal handler runs.
func killContainer(ctx context.Context, ns, pod string) {
	p, err := clientset.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(p.Status.ContainerStatuses).To(HaveLen(1))
	id, ok := strings.CutPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	Expect(ok).To(BeTrue(), "container id %q", p.Status.ContainerStatuses[0].ContainerID)
	_, err = localCluster(ctx, "ctr", "tasks", "kill", "--signal", "SIGKILL", id)
	Expect(err).NotTo(HaveOccurred())
}

// describeRealAgent is describeAgent with the log of each of the agent's pods.
func describeRealAgent(ctx context.Context, ns, conv string, u *unstructured.Unstructured) string {
	s := describeAgent(ctx, ns, conv, u)
	pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "parley.dev/conversation=" + conv})
	if err != nil {
		return s
	}
	for _, p := range pods.Items {
		b, err := clientset.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		s += fmt.Sprintf("\nlog of %s (%v):\n%s", p.Name, err, b)
	}
	return s
}
