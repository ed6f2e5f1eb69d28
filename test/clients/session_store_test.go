package envtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/bundle"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
)

// The TypeScript session store (clients/typescript) is compiled with the TypeScript and the
// Claude Agent SDK that hack/claude-agent-sdk.sh installs (make claude-agent-sdk, a
// prerequisite of make test), and clients/typescript/test/check_store.mjs runs the real SDK
// against this suite's Session API: every SessionStore contract, importSessionToStore of a
// real transcript, and a resume whose transcript lives only in Parley.

// agentSDK is the folder holding the SDK's node_modules, or a skip (a failure in CI).
func agentSDK() string {
	dir := os.Getenv("PARLEY_CLAUDE_AGENT_SDK")
	if dir == "" {
		dir = filepath.Join(repoRoot, "bin", "claude-agent-sdk")
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

// typescriptWorkspace copies clients/typescript into a scratch folder beside the SDK's
// node_modules, compiles it, and fails when the committed dist/ is not what the sources
// compile to.
func typescriptWorkspace(sdk string) string {
	src := filepath.Join(repoRoot, "clients", "typescript")
	work := GinkgoT().TempDir()
	for _, f := range []string{"package.json", "tsconfig.json", "src/index.ts", "test/check_store.mjs", "test/messages-stub.mjs"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.MkdirAll(filepath.Dir(filepath.Join(work, f)), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(work, f), data, 0o644)).To(Succeed())
	}
	Expect(os.Symlink(filepath.Join(sdk, "node_modules"), filepath.Join(work, "node_modules"))).To(Succeed())
	start := time.Now()
	out, err := exec.CommandContext(ctx, "node", filepath.Join(work, "node_modules", "typescript", "bin", "tsc"), "-p", work).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "tsc:\n%s", out)
	GinkgoWriter.Printf("tsc compiled clients/typescript in %s\n", time.Since(start).Round(time.Millisecond))
	for _, f := range []string{"dist/index.js", "dist/index.d.ts"} {
		built, err := os.ReadFile(filepath.Join(work, f))
		Expect(err).NotTo(HaveOccurred())
		committed, err := os.ReadFile(filepath.Join(src, f))
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Equal(built, committed)).To(BeTrue(), "clients/typescript/%s is not what src/ compiles to: run make typescript-client and commit it", f)
	}
	return work
}

// conversationWithSession creates a live conversation whose session id is pinned.
func conversationWithSession(ns, name, sessionID string) *parleyv1alpha1.Conversation {
	conv := newConversation(parleyv1alpha1.ConversationSpec{SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "agent " + name}, SessionID: sessionID})
	conv.Namespace, conv.GenerateName, conv.Name = ns, "", name
	Expect(k8sClient.Create(ctx, conv)).To(Succeed())
	Eventually(historyReady(conv)).Should(Succeed())
	return conv
}

// transcriptCall sends a JSON request and decodes a 2xx answer into out; it returns the status.
func transcriptCall(method, path, token string, body any, out any) int {
	var payload []byte
	if body != nil {
		var err error
		payload, err = json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
	}
	req, err := http.NewRequestWithContext(ctx, method, sessionURL+path, bytes.NewReader(payload))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 == 2 && out != nil {
		Expect(json.NewDecoder(resp.Body).Decode(out)).To(Succeed())
	}
	return resp.StatusCode
}

// The transcript endpoints without node: what the TypeScript store relies on, tested from Go.
var _ = Describe("Session API transcripts", func() {
	It("stores an agent's transcript lines once by uuid, pages and lists them, refuses bad lines, and shows them as messages", func() {
		ns := agentNamespace()
		mainData, err := os.ReadFile(filepath.Join(repoRoot, "clients", "typescript", "test", "testdata", "main-transcript.jsonl"))
		Expect(err).NotTo(HaveOccurred())
		fixture, err := conversation.ImportClaudeSession(mainData)
		Expect(err).NotTo(HaveOccurred())
		conv := conversationWithSession(ns, "lines", fixture.SessionID)
		token := agentToken(ns, "agent", agentPodOf(conv))
		base := wire.ConversationPath(ns, conv.Name)
		var lines []json.RawMessage
		for l := range bytes.SplitSeq(bytes.TrimSpace(mainData), []byte{'\n'}) {
			lines = append(lines, json.RawMessage(l))
		}

		var first, again, rest wire.TranscriptAppendResponse
		Expect(transcriptCall(http.MethodPost, base+"/transcript", token, wire.TranscriptAppendRequest{Batch: "b1", Entries: lines[:6]}, &first)).To(Equal(200))
		Expect(transcriptCall(http.MethodPost, base+"/transcript", token, wire.TranscriptAppendRequest{Batch: "b1", Entries: lines[:6]}, &again)).To(Equal(200))
		Expect(again.Sequences).To(Equal(first.Sequences), "a retried batch is stored once")
		Expect(transcriptCall(http.MethodPost, base+"/transcript", token, wire.TranscriptAppendRequest{Batch: "b2", Entries: lines[6:]}, &rest)).To(Equal(200))

		// Bad lines and subpaths: refused whole.
		var head wire.Conversation
		Expect(transcriptCall(http.MethodGet, base, token, nil, &head)).To(Equal(200))
		status, p, _ := rawCall(http.MethodPost, base+"/transcript", token, []byte(`{"entries":[{"type":"user","uuid":"fine"},{"uuid":"no-type"}]}`))
		Expect(status).To(Equal(422))
		Expect(p.Type).To(Equal(wire.ProblemInvalid))
		status, _, _ = rawCall(http.MethodPost, base+"/transcript", token, []byte(`{"subpath":"../x","entries":[{"type":"user"}]}`))
		Expect(status).To(Equal(422))
		status, _, _ = rawCall(http.MethodGet, base+"/transcript?subpath=..%2Fx", token, nil)
		Expect(status).To(Equal(400))
		var after wire.Conversation
		Expect(transcriptCall(http.MethodGet, base, token, nil, &after)).To(Equal(200))
		Expect(after.Sequence).To(Equal(head.Sequence), "nothing of a refused batch is stored")

		// Pages of 5 lines give back every line as sent.
		var got []json.RawMessage
		for offset := 0; ; {
			var page wire.TranscriptPage
			Expect(transcriptCall(http.MethodGet, fmt.Sprintf("%s/transcript?offset=%d&limit=5", base, offset), token, nil, &page)).To(Equal(200))
			Expect(page.Exists).To(BeTrue())
			got = append(got, page.Entries...)
			if page.Next == 0 {
				break
			}
			offset = page.Next
		}
		Expect(got).To(HaveLen(len(lines)))
		for i := range lines {
			Expect(got[i]).To(MatchJSON(lines[i]), "line %d", i)
		}
		var none wire.TranscriptPage
		Expect(transcriptCall(http.MethodGet, base+"/transcript?subpath=subagents%2Fagent-none", token, nil, &none)).To(Equal(200))
		Expect(none.Exists).To(BeFalse())
		var index wire.TranscriptIndex
		Expect(transcriptCall(http.MethodGet, base+"/transcripts", token, nil, &index)).To(Equal(200))
		Expect(index.SessionID).To(Equal(fixture.SessionID))
		Expect(index.Transcripts).To(HaveLen(1))
		Expect(index.Transcripts[0].Subpath).To(BeEmpty())
		Expect(index.Transcripts[0].Modified).NotTo(BeNil())

		// The lines are the conversation's messages.
		var msgs wire.MessagesPage
		Expect(transcriptCall(http.MethodGet, base+"/messages", token, nil, &msgs)).To(Equal(200))
		ids := make([]string, 0, len(msgs.Messages))
		for _, m := range msgs.Messages {
			ids = append(ids, m.ID)
		}
		want := make([]string, 0, len(fixture.Messages))
		for _, m := range fixture.Messages {
			want = append(want, m.ID)
		}
		Expect(ids).To(Equal(want))
	})
})

var _ = Describe("Claude Agent SDK session store (clients/typescript)", Label("agent-sdk"), func() {
	It("keeps the SDK's transcript in the conversation: every contract, a real import, a resume from Parley alone", func() {
		sdk := agentSDK()
		work := typescriptWorkspace(sdk)

		ns := agentNamespace()
		resumed := conversationWithSession(ns, "resumed", uuid.NewString())
		contract := liveConversation(ns, "contract")
		fixtureMain := filepath.Join(repoRoot, "clients", "typescript", "test", "testdata", "main-transcript.jsonl")
		fixtureSub := filepath.Join(repoRoot, "clients", "typescript", "test", "testdata", "subagent-transcript.jsonl")
		mainData, err := os.ReadFile(fixtureMain)
		Expect(err).NotTo(HaveOccurred())
		subData, err := os.ReadFile(fixtureSub)
		Expect(err).NotTo(HaveOccurred())
		fixture, err := conversation.ImportClaudeSession(mainData, conversation.ClaudeSubagentFile{AgentID: "a9b844f", Data: subData})
		Expect(err).NotTo(HaveOccurred())
		imported := conversationWithSession(ns, "imported", fixture.SessionID)

		// The resume conversation is used as from its agent pod: a pod-bound token in a file.
		tokenFile := filepath.Join(GinkgoT().TempDir(), "token")
		Expect(os.WriteFile(tokenFile, []byte(agentToken(ns, "agent", agentPodOf(resumed))), 0o600)).To(Succeed())
		runCtx, cancel := context.WithTimeout(ctx, 6*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(runCtx, "node", filepath.Join(work, "test", "check_store.mjs"))
		cmd.Dir = work
		cmd.Env = append(os.Environ(),
			"PARLEY_API_URL="+sessionURL, "PARLEY_NAMESPACE="+ns, "PARLEY_CONVERSATION="+resumed.Name,
			"PARLEY_SESSION_ID="+resumed.Status.SessionID, "PARLEY_TOKEN_FILE="+tokenFile,
			"PARLEY_CHECK_CONTRACT="+contract.Name, "PARLEY_CHECK_IMPORT="+imported.Name,
			"PARLEY_CHECK_TOKEN="+agentToken(ns, "agent", nil),
			"PARLEY_CHECK_TESTDATA="+filepath.Dir(fixtureMain), "PARLEY_CHECK_DIR="+GinkgoT().TempDir(),
		)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		GinkgoWriter.Printf("check_store.mjs (%s):\n%s\n", time.Since(start).Round(time.Millisecond), out)
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(string(out)).To(ContainSubstring(`{"ok":true`))

		// One source of truth: the turns the SDK mirrored are the conversation's messages, and
		// the resume bundle a new pod would mount is built from them.
		api, err := parleyclient.New(parleyclient.Options{URL: sessionURL, Token: agentToken(ns, "agent", nil)})
		Expect(err).NotTo(HaveOccurred())
		page, err := api.Messages(ctx, ns, resumed.Name, 0, 1000)
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
		bundleNow, err := api.Resume(ctx, ns, resumed.Name, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(bundleNow.Files[bundle.AnthropicFile]).To(ContainSubstring("PARLEY_TOOL_OUTPUT"))
		Expect(bundleNow.Files[bundle.AnthropicFile]).To(ContainSubstring("SECOND_ANSWER"))

		// The imported transcript is the history Parley's own importer makes of the same files,
		// then the turn the resume added.
		page, err = api.Messages(ctx, ns, imported.Name, 0, 1000)
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
})

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
