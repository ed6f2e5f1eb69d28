package clients

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/parley-dev/parley/internal/sessionapi"
	parleyclient "github.com/parley-dev/parley/pkg/client"
)

// The TypeScript Session API client (clients/session-api-typescript) and the adapters built on
// it — the OpenAI Agents SDK session (clients/openai-agents-session), the LangGraph checkpoint
// saver (clients/langgraph-checkpoint-saver) and the Claude Agent SDK session store
// (clients/claude-agent-sdk-session-store) — are compiled with the TypeScript and the
// frameworks that hack/agent-frameworks.sh and hack/claude-agent-sdk.sh install (make
// agent-frameworks claude-agent-sdk, prerequisites of make test), and their tests run with node
// against this suite's Session API: the client's calls, the OpenAI Session behaviour with the
// real SDK, LangGraph's own conformance suite (validate-checkpointer) and a real graph against
// the saver, and the session store under the real Claude Agent SDK (session_store_test.go).

// agentClientPackages are the folders under clients/, the client first (the adapters compile
// against it).
var agentClientPackages = []string{"session-api-typescript", "openai-agents-session", "langgraph-checkpoint-saver", "claude-agent-sdk-session-store"}

// agentFrameworks is the folder holding the frameworks' node_modules, or a skip (a failure in CI).
func agentFrameworks() string {
	dir := os.Getenv("PARLEY_AGENT_FRAMEWORKS")
	if dir == "" {
		dir = filepath.Join(env.RepoRoot, "bin", "agent-frameworks")
	}
	unavailable := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") != "" {
			Fail(msg + " (CI must run the agent framework adapters)")
		}
		Skip(msg)
	}
	if why, err := os.ReadFile(dir + ".UNAVAILABLE"); err == nil {
		unavailable("the agent frameworks could not be installed: %s", strings.TrimSpace(string(why)))
	}
	for _, pkg := range []string{"typescript", "@openai/agents", "@langchain/langgraph-checkpoint-validation"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			unavailable("%s is not installed in %s: run make agent-frameworks (npm install of the agent frameworks)", pkg, dir)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		unavailable("node is not installed")
	}
	return dir
}

// agentClientsWorkspace copies the packages into a scratch clients/ folder, compiles them with
// hack/agent-clients.sh, and fails when a committed dist/ is not what its sources compile to.
// It returns the scratch clients/ folder.
func agentClientsWorkspace(frameworks, sdk string) string {
	work := filepath.Join(GinkgoT().TempDir(), "clients")
	for _, pkg := range agentClientPackages {
		src := filepath.Join(env.RepoRoot, "clients", pkg)
		Expect(os.CopyFS(filepath.Join(work, pkg), os.DirFS(src))).To(Succeed())
		Expect(os.RemoveAll(filepath.Join(work, pkg, "dist"))).To(Succeed())
	}
	start := time.Now()
	out, err := exec.CommandContext(env.Ctx, filepath.Join(env.RepoRoot, "hack", "agent-clients.sh"), frameworks, work, sdk).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "compiling the agent clients:\n%s", out)
	GinkgoWriter.Printf("tsc compiled the agent clients in %s\n", time.Since(start).Round(time.Millisecond))
	for _, pkg := range agentClientPackages {
		built := filepath.Join(work, pkg, "dist")
		committed := filepath.Join(env.RepoRoot, "clients", pkg, "dist")
		Expect(sameTree(built, committed)).To(Succeed(), "clients/%s/dist is not what src/ compiles to: run make agent-clients and commit it", pkg)
	}
	return work
}

// sameTree reports the first file that differs between two folders.
func sameTree(a, b string) error {
	names := func(dir string) (map[string][]byte, error) {
		out := map[string][]byte{}
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = data
			return err
		})
		return out, err
	}
	got, err := names(a)
	if err != nil {
		return err
	}
	want, err := names(b)
	if err != nil {
		return err
	}
	for name, data := range got {
		if w, ok := want[name]; !ok || !bytes.Equal(data, w) {
			return fmt.Errorf("%s differs or is not committed", name)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			return fmt.Errorf("%s is committed but not built", name)
		}
	}
	return nil
}

// runNode runs a node program in dir with vars, and fails with its output unless it succeeds.
func runNode(dir string, vars []string, args ...string) string {
	runCtx, cancel := context.WithTimeout(env.Ctx, 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "node", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), vars...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	GinkgoWriter.Printf("node %s (%s):\n%s\n", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
	Expect(err).NotTo(HaveOccurred(), "node %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// tlsProxy serves the suite's Session API behind TLS, with a certificate signed by a CA it
// writes to a file; it returns the URL and that file.
func tlsProxy() (string, string) {
	certs, err := sessionapi.NewCertificates(env.Ctx, sessionapi.CertificatesOptions{Hosts: []string{"127.0.0.1"}})
	Expect(err).NotTo(HaveOccurred())
	setup, caPEM := certs.TLS(), certs.TrustedCA()
	target, err := url.Parse(env.SessionURL)
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{Handler: httputil.NewSingleHostReverseProxy(target), ReadHeaderTimeout: 10 * time.Second}
	Expect(setup(env.Ctx, srv)).To(Succeed())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	DeferCleanup(srv.Close)
	caFile := filepath.Join(GinkgoT().TempDir(), "ca.crt")
	Expect(os.WriteFile(caFile, caPEM, 0o600)).To(Succeed())
	return "https://" + ln.Addr().String(), caFile
}

// provisioner answers POST /?name=N by creating the Conversation N in ns and waiting until its
// history is available: the LangGraph suite makes up thread ids, and a thread is a
// Conversation.
func provisioner(ns string) string {
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer GinkgoRecover()
		env.LiveConversation(ns, r.URL.Query().Get("name"))
		w.WriteHeader(http.StatusNoContent)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			GinkgoWriter.Printf("provisioner: %v\n", err)
		}
	}()
	DeferCleanup(srv.Close)
	return "http://" + ln.Addr().String() + "/"
}

// blockSummary lists a conversation's messages as role:block-type:text-or-tool.
func blockSummary(ns, name, token string) []string {
	api, err := parleyclient.New(parleyclient.Options{URL: env.SessionURL, Token: token})
	Expect(err).NotTo(HaveOccurred())
	page, err := api.Messages(env.Ctx, ns, name, 0, 1000)
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, m := range page.Messages {
		for _, b := range m.Blocks {
			out = append(out, fmt.Sprintf("%s:%s:%s%s%s", m.Role, b.Type, b.Text, b.ToolName, b.ToolUseID))
		}
	}
	return out
}

var _ = Describe("Agent framework adapters (clients/*, TypeScript)", Label("agent-frameworks"), Ordered, func() {
	var work, ns, token string

	BeforeAll(func() {
		work = agentClientsWorkspace(agentFrameworks(), agentSDK())
		ns = env.AgentNamespace()
		env.GrantHistory(ns, "resetter", []string{"get", "create", "delete"})
		token = env.AgentToken(ns, "resetter", nil)
	})

	It("the Session API client: token file, paging, idempotent retries, follow, reset, CA", func() {
		conv := env.LiveConversation(ns, "ts-client")
		env.LiveConversation(ns, "ts-reset")
		tokenFile := filepath.Join(GinkgoT().TempDir(), "token")
		Expect(os.WriteFile(tokenFile, []byte(env.AgentToken(ns, "agent", env.AgentPodOf(conv))), 0o600)).To(Succeed())
		tlsURL, caFile := tlsProxy()
		runNode(filepath.Join(work, "session-api-typescript"), []string{
			"PARLEY_API_URL=" + env.SessionURL, "PARLEY_NAMESPACE=" + ns, "PARLEY_CONVERSATION=" + conv.Name,
			"PARLEY_TOKEN_FILE=" + tokenFile, "PARLEY_CHECK_RESET=ts-reset", "PARLEY_CHECK_TOKEN=" + token,
			"PARLEY_CHECK_TLS_URL=" + tlsURL, "PARLEY_CHECK_CA_FILE=" + caFile,
		}, "--test", "--test-reporter=spec", "test/")
	})

	It("the OpenAI Agents SDK session: lossless items, order, limit, popItem, clearSession, a resumed run", func() {
		for _, name := range []string{"oa-roundtrip", "oa-limits", "oa-pop", "oa-foreign", "oa-run"} {
			env.LiveConversation(ns, name)
		}
		runNode(filepath.Join(work, "openai-agents-session"), []string{
			"PARLEY_API_URL=" + env.SessionURL, "PARLEY_NAMESPACE=" + ns, "PARLEY_CHECK_TOKEN=" + token,
		}, "--test", "--test-reporter=spec", "test/")

		// The items are the conversation's messages, in the neutral model.
		Expect(containsInOrder(blockSummary(ns, "oa-run", token),
			"user:text:weather in Paris?", "assistant:tool_use:weathercall_w", "tool:tool_result:18 °C in Paris",
			"assistant:text:FIRST_ANSWER", "user:text:and tomorrow?", "assistant:text:SECOND_ANSWER")).To(Succeed())
		api, err := parleyclient.New(parleyclient.Options{URL: env.SessionURL, Token: token})
		Expect(err).NotTo(HaveOccurred())
		page, err := api.Messages(env.Ctx, ns, "oa-roundtrip", 0, 1000)
		Expect(err).NotTo(HaveOccurred())
		for _, m := range page.Messages {
			Expect(m.Source.Kind).To(Equal("openai-responses"))
		}
		bundle, err := api.Resume(env.Ctx, ns, "oa-run", 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(bundle.Files["messages.openai.json"]).To(ContainSubstring("SECOND_ANSWER"))
	})

	It("the LangGraph checkpoint saver: LangGraph's conformance suite, and a graph resumed by a new saver", func() {
		dir := filepath.Join(work, "langgraph-checkpoint-saver")
		vars := []string{"PARLEY_API_URL=" + env.SessionURL, "PARLEY_NAMESPACE=" + ns, "PARLEY_CHECK_TOKEN=" + token, "PARLEY_CHECK_PROVISION=" + provisioner(ns), "NO_COLOR=1"}
		// The suite validate-checkpointer runs, through the package's own entry point (see
		// test/conformance.test.mjs), on vitest as the CLI runs it.
		out := runNode(dir, vars, filepath.Join(work, "node_modules", "vitest", "vitest.mjs"), "run", "--globals", "test/conformance.test.mjs")
		Expect(out).To(MatchRegexp(`Tests\s+\d+ passed`))
		Expect(out).NotTo(MatchRegexp(`Tests\s+.*\d+ (failed|skipped)`))

		env.LiveConversation(ns, "lg-graph")
		runNode(dir, vars, "--test", "--test-reporter=spec", "test/graph.test.mjs")
		// The graph's messages are the conversation's messages: what kubectl parley history shows.
		Expect(containsInOrder(blockSummary(ns, "lg-graph", token),
			"user:text:weather in Paris?", "assistant:tool_use:weathercall_1", "tool:tool_result:18 °C in Paris",
			"assistant:text:FIRST_ANSWER", "user:text:and tomorrow?", "assistant:text:SECOND_ANSWER")).To(Succeed())
		api, err := parleyclient.New(parleyclient.Options{URL: env.SessionURL, Token: token})
		Expect(err).NotTo(HaveOccurred())
		st, err := api.State(env.Ctx, ns, "lg-graph")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.State.Messages).To(HaveLen(6), "each message once")
		Expect(st.State.Records).NotTo(BeEmpty())
		for _, r := range st.State.Records {
			Expect(string(r.Raw)).To(HavePrefix(`{"type":"langgraph.`))
		}
	})

	It("the LangGraph checkpoint saver: a put a crash interrupts leaves no message without its checkpoint, and its retry stores nothing twice", func() {
		env.LiveConversation(ns, "lg-crash")
		env.LiveConversation(ns, "lg-retry")
		runNode(filepath.Join(work, "langgraph-checkpoint-saver"), []string{
			"PARLEY_API_URL=" + env.SessionURL, "PARLEY_NAMESPACE=" + ns, "PARLEY_CHECK_TOKEN=" + token,
		}, "--test", "--test-reporter=spec", "test/put.test.mjs")
	})

	sessionStoreSpecs(func() string { return work })
})
