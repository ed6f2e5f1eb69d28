package clients

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/parley-dev/parley/internal/bundle"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/test/fixtures"
)

// The Claude Agent SDK session store (clients/claude-agent-sdk-session-store), on the
// TypeScript client, is compiled with the other TypeScript packages (agentClientsWorkspace)
// against the Claude Agent SDK that hack/claude-agent-sdk.sh installs (make claude-agent-sdk, a
// prerequisite of make test), and its test/check_store.mjs runs the real SDK against this
// suite's Session API: every SessionStore contract, importSessionToStore of a real transcript
// (the Claude Code session of test/fixtures), and a resume whose transcript lives only in
// Parley.

// agentSDK is the folder holding the SDK's node_modules, or a skip (a failure in CI).
func agentSDK() string {
	dir := os.Getenv("PARLEY_CLAUDE_AGENT_SDK")
	if dir == "" {
		dir = filepath.Join(env.RepoRoot, "bin", "claude-agent-sdk")
	}
	unavailable := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") != "" {
			Fail(msg + " (CI must run the real Claude Agent SDK)")
		}
		Skip(msg)
	}
	if why, err := os.ReadFile(dir + ".UNAVAILABLE"); err == nil {
		unavailable("the Claude Agent SDK could not be installed: %s", strings.TrimSpace(string(why)))
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-agent-sdk", "package.json")); err != nil {
		unavailable("the Claude Agent SDK is not installed in %s: run make claude-agent-sdk (npm install of @anthropic-ai/claude-agent-sdk)", dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		unavailable("node is not installed")
	}
	return dir
}

// sessionStoreSpecs are the session store's specs, in the Ordered container of the TypeScript
// packages: work is their compiled clients/ folder.
func sessionStoreSpecs(work func() string) {
	It("the Claude Agent SDK session store: every contract, a real import, a resume from Parley alone", Label("agent-sdk"), func() {
		dir := filepath.Join(work(), "claude-agent-sdk-session-store")

		ns := env.AgentNamespace()
		resumed := env.ConversationWithSession(ns, "resumed", uuid.NewString())
		contract := env.LiveConversation(ns, "contract")
		fixtureMain, fixtureSub := fixtures.Path(fixtures.ClaudeMain), fixtures.Path(fixtures.ClaudeSubagent)
		mainData, err := os.ReadFile(fixtureMain)
		Expect(err).NotTo(HaveOccurred())
		subData, err := os.ReadFile(fixtureSub)
		Expect(err).NotTo(HaveOccurred())
		fixture, err := conversation.ImportClaudeSession(mainData, conversation.ClaudeSubagentFile{AgentID: fixtures.ClaudeAgentID, Data: subData})
		Expect(err).NotTo(HaveOccurred())
		imported := env.ConversationWithSession(ns, "imported", fixture.SessionID)

		// The resume conversation is used as from its agent pod: a pod-bound token in a file.
		tokenFile := filepath.Join(GinkgoT().TempDir(), "token")
		Expect(os.WriteFile(tokenFile, []byte(env.AgentToken(ns, "agent", env.AgentPodOf(resumed))), 0o600)).To(Succeed())
		runCtx, cancel := context.WithTimeout(env.Ctx, 6*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(runCtx, "node", filepath.Join(dir, "test", "check_store.mjs"))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(),
			"PARLEY_API_URL="+env.SessionURL, "PARLEY_NAMESPACE="+ns, "PARLEY_CONVERSATION="+resumed.Name,
			"PARLEY_SESSION_ID="+resumed.Status.SessionID, "PARLEY_TOKEN_FILE="+tokenFile,
			"PARLEY_CHECK_CONTRACT="+contract.Name, "PARLEY_CHECK_IMPORT="+imported.Name,
			"PARLEY_CHECK_TOKEN="+env.AgentToken(ns, "agent", nil),
			"PARLEY_CHECK_MAIN_TRANSCRIPT="+fixtureMain, "PARLEY_CHECK_SUBAGENT_TRANSCRIPT="+fixtureSub,
			"PARLEY_CHECK_DIR="+GinkgoT().TempDir(),
		)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		GinkgoWriter.Printf("check_store.mjs (%s):\n%s\n", time.Since(start).Round(time.Millisecond), out)
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(string(out)).To(ContainSubstring(`{"ok":true`))

		// One source of truth: the turns the SDK mirrored are the conversation's messages, and
		// the resume bundle a new pod would mount is built from them.
		api, err := parleyclient.New(parleyclient.Options{URL: env.SessionURL, Token: env.AgentToken(ns, "agent", nil)})
		Expect(err).NotTo(HaveOccurred())
		page, err := api.Messages(env.Ctx, ns, resumed.Name, 0, 1000)
		Expect(err).NotTo(HaveOccurred())
		var seen []string
		for _, m := range page.Messages {
			for _, b := range m.Blocks {
				seen = append(seen, fmt.Sprintf("%s:%s:%s%s%s", m.Role, b.Type, b.Text, b.ToolName, b.ToolUseID))
			}
		}
		Expect(containsInOrder(seen, "user:text:parley first turn", "assistant:tool_use:Readtoolu_read_1", "tool:tool_result:",
			"assistant:tool_use:Agenttoolu_agent_1", "assistant:text:FIRST_ANSWER", "user:text:parley second turn", "assistant:text:SECOND_ANSWER")).
			To(Succeed(), "messages:\n%s", strings.Join(seen, "\n"))
		bundleNow, err := api.Resume(env.Ctx, ns, resumed.Name, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(bundleNow.Files[bundle.AnthropicFile]).To(ContainSubstring("PARLEY_TOOL_OUTPUT"))
		Expect(bundleNow.Files[bundle.AnthropicFile]).To(ContainSubstring("SECOND_ANSWER"))

		// The imported transcript is the history Parley's own importer makes of the same files,
		// then the turn the resume added.
		page, err = api.Messages(env.Ctx, ns, imported.Name, 0, 1000)
		Expect(err).NotTo(HaveOccurred())
		want := make([]string, 0, len(fixture.Messages))
		for _, m := range fixture.Messages {
			want = append(want, m.ID)
		}
		Expect(len(page.Messages)).To(BeNumerically(">", len(want)))
		got := make([]string, 0, len(page.Messages))
		for _, m := range page.Messages {
			got = append(got, m.ID)
		}
		Expect(got[:len(want)]).To(Equal(want))
		Expect(page.Messages[len(want)].Text()).To(ContainSubstring("parley resumes the fixture"))
	})
}

// containsInOrder checks that each prefix starts some item of items, in the given order.
func containsInOrder(items []string, prefixes ...string) error {
	at := 0
	for _, p := range prefixes {
		for at < len(items) && !strings.HasPrefix(items[at], p) {
			at++
		}
		if at == len(items) {
			return fmt.Errorf("no item starting with %q (in order)", p)
		}
		at++
	}
	return nil
}
