package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/plugin"
	"github.com/parley-dev/parley/internal/sessionapi"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/fixtures"
)

const claudeSession = fixtures.ClaudeSessionID

var (
	claudeFile   = fixtures.Path(fixtures.ClaudeMain)
	openCodeFile = fixtures.Path(fixtures.OpenCode)
)

func text(s string) conversation.Block {
	return conversation.Block{Type: conversation.BlockText, Text: s}
}

func msg(id string, role conversation.Role, blocks ...conversation.Block) conversation.Message {
	return conversation.Message{ID: id, Role: role, Blocks: blocks}
}

// twoTurns is a short conversation: a question, a tool call and its result, an answer.
func twoTurns(prefix string) []conversation.Message {
	a1 := msg(prefix+"a1", conversation.RoleAssistant, text("Let me look."),
		conversation.Block{Type: conversation.BlockToolUse, ToolUseID: prefix + "t1", ToolName: "Bash", Input: []byte(`{"command":"ls /tmp"}`)})
	a1.Model, a1.Usage = "claude-sonnet-4", conversation.Usage{Input: 1204, Output: 56}
	return []conversation.Message{
		msg(prefix+"u1", conversation.RoleUser, text("What is in /tmp?")),
		a1,
		msg(prefix+"r1", conversation.RoleTool, conversation.Block{Type: conversation.BlockToolResult, ToolUseID: prefix + "t1", Text: "a.txt\nb.txt"}),
		msg(prefix+"a2", conversation.RoleAssistant, text("Two files: a.txt and b.txt.")),
	}
}

func appendMessages(t *testing.T, u *user, name string, msgs []conversation.Message) {
	t.Helper()
	_, err := u.direct(t).Append(context.Background(), u.ns, name, msgs)
	must(t, err)
}

// inOrder fails unless every piece appears in s, each after the one before.
func inOrder(t *testing.T, s string, pieces ...string) {
	t.Helper()
	at := 0
	for _, p := range pieces {
		i := strings.Index(s[at:], p)
		if i < 0 {
			t.Fatalf("output lacks %q (after byte %d):\n%s", p, at, s)
		}
		at += i + len(p)
	}
}

func TestHistoryThroughTheAPIServer(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	conv := u.conversation(t, "chat", nil)
	appendMessages(t, u, "chat", twoTurns(""))

	out, _, err := u.kp(ctx, "history", "chat")
	must(t, err)
	inOrder(t, out,
		fmt.Sprintf("Conversation %s/chat · session %s · epoch 1 · 4 messages · 2 turns · ", u.ns, conv.Status.SessionID),
		"\nsystem\n  You are the test agent.\n",
		"── turn 1 ", "\nuser\n  What is in /tmp?\n",
		"assistant · claude-sonnet-4 · tokens in 1,204 · out 56\n  Let me look.\n  ▸ Bash {\"command\":\"ls /tmp\"}\n",
		"tool\n  ◂ result a.txt ⏎ b.txt\n",
		"── turn 2 ", "\nassistant\n  Two files: a.txt and b.txt.\n")

	full, _, err := u.kp(ctx, "history", "chat", "--full")
	must(t, err)
	inOrder(t, full, "  ▸ Bash [t1]\n    {\"command\":\"ls /tmp\"}\n", "  ◂ result [t1]\n    a.txt\n    b.txt\n")

	out, _, err = u.kp(ctx, "history", "chat", "-o", "openai")
	must(t, err)
	var openai []map[string]any
	must(t, json.Unmarshal([]byte(out), &openai))
	roles := make([]string, 0, len(openai))
	for _, m := range openai {
		roles = append(roles, m["role"].(string))
	}
	if diff := cmp.Diff([]string{"system", "user", "assistant", "tool", "assistant"}, roles); diff != "" {
		t.Fatalf("history -o openai roles (-want +got):\n%s", diff)
	}

	out, _, err = u.kp(ctx, "history", "chat", "-o", "jsonl")
	must(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], `"role":"system"`) || !strings.Contains(lines[4], `"id":"a2"`) {
		t.Fatalf("history -o jsonl: %d lines:\n%s", len(lines), out)
	}
}

func TestRBACAndCredentials(t *testing.T) {
	ctx := context.Background()
	alice := newUser(t, "get", "create")
	alice.conversation(t, "chat", nil)
	appendMessages(t, alice, "chat", twoTurns(""))

	t.Run("a user without conversations/history is refused through the API server, with what to ask for", func(t *testing.T) {
		bob := newUser(t) // may read Conversation objects, not histories
		bob.conversation(t, "mine", nil)
		_, _, err := bob.kp(ctx, "history", "mine")
		if err == nil || !strings.Contains(err.Error(), "system:serviceaccount:"+bob.ns+":alice may not get conversations/history of "+bob.ns+"/mine") ||
			!strings.Contains(err.Error(), "conversation-viewer-role") {
			t.Fatalf("want a 403 naming the user and the role to ask for, got %v", err)
		}
		// And reading alice's conversation is no better: bob has no rights in her namespace,
		// so the API server refuses before the Session API is asked.
		_, _, err = bob.kp(ctx, "history", "chat", "-n", alice.ns)
		if err == nil || !strings.Contains(err.Error(), "the API server does not let you") {
			t.Fatalf("bob read alice's history: %v", err)
		}
	})

	t.Run("--session-api-token goes with --session-api-url only", func(t *testing.T) {
		_, _, err := alice.kp(ctx, "history", "chat", "--session-api-token", alice.token)
		if err == nil || !strings.Contains(err.Error(), "--session-api-token goes with --session-api-url") {
			t.Fatalf("a token without a URL: %v", err)
		}
	})

	t.Run("impersonation applies through the API server, and is refused with a direct URL", func(t *testing.T) {
		as := "system:serviceaccount:" + alice.ns + ":alice"
		out, _, err := runPlugin(ctx, "--kubeconfig", env.adminKubeconfig, "-n", alice.ns, "history", "chat", "--as", as)
		must(t, err)
		inOrder(t, out, "4 messages", "Two files")
		_, _, err = runPlugin(ctx, "--kubeconfig", env.adminKubeconfig, "-n", alice.ns, "history", "chat", "--as", "nobody")
		if err == nil || !strings.Contains(err.Error(), "the API server does not let you") {
			t.Fatalf("--as a user without rights: %v", err)
		}
		_, _, err = alice.kp(ctx, "history", "chat", "--as", "someone", "--session-api-url", fmt.Sprintf("https://127.0.0.1:%d", env.apiPort))
		if err == nil || !strings.Contains(err.Error(), "cannot be used with --session-api-url") {
			t.Fatalf("--as with a direct URL: %v", err)
		}
	})

	t.Run("a direct URL with the kubeconfig's own token", func(t *testing.T) {
		ca := filepath.Join(env.dir, "session-api-ca.crt")
		must(t, os.WriteFile(ca, env.apiCA, 0o600))
		url := fmt.Sprintf("https://127.0.0.1:%d", env.apiPort)
		out, _, err := alice.kp(ctx, "history", "chat", "--session-api-url", url, "--session-api-ca-file", ca)
		must(t, err)
		inOrder(t, out, "4 messages", "Two files")
		// The name the certificate is checked for: one it holds (this host's address), and one it does not.
		_, _, err = alice.kp(ctx, "history", "chat", "--session-api-url", url, "--session-api-ca-file", ca, "--session-api-tls-server-name", env.hostIP)
		must(t, err)
		_, _, err = alice.kp(ctx, "history", "chat", "--session-api-url", url, "--session-api-ca-file", ca, "--session-api-tls-server-name", "elsewhere.example")
		if err == nil || !strings.Contains(err.Error(), "elsewhere.example") {
			t.Fatalf("a server name the certificate does not hold: %v", err)
		}
		// Without --session-api-ca-file: the CAs the manager publishes in its ConfigMap, which
		// the session-api-user Role (bound to alice) may read.
		out, _, err = alice.kp(ctx, "history", "chat", "--session-api-url", url)
		must(t, err)
		inOrder(t, out, "4 messages")
		// With a CA that did not sign it: the certificate is not trusted.
		otherCA, _, err := sessionapi.NewCA(time.Now(), []string{"127.0.0.1"})
		must(t, err)
		foreign := filepath.Join(env.dir, "other-ca.crt")
		must(t, os.WriteFile(foreign, otherCA, 0o600))
		_, _, err = alice.kp(ctx, "history", "chat", "--session-api-url", url, "--session-api-ca-file", foreign)
		if err == nil || !strings.Contains(err.Error(), "cannot reach the Session API at "+url) || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("an unverified certificate: %v", err)
		}
		// A client certificate has no token to send directly: the error says what to do.
		_, _, err = runPlugin(ctx, "--kubeconfig", env.adminKubeconfig, "-n", alice.ns, "history", "chat", "--session-api-url", url)
		if err == nil || !strings.Contains(err.Error(), "authenticates with a client certificate") || !strings.Contains(err.Error(), "Leave out --session-api-url") {
			t.Fatalf("a certificate kubeconfig with a direct URL: %v", err)
		}
	})

	t.Run("a conversation that does not exist", func(t *testing.T) {
		_, _, err := alice.kp(ctx, "history", "nope")
		if err == nil || !strings.Contains(err.Error(), "conversation "+alice.ns+"/nope does not exist") {
			t.Fatalf("a missing conversation: %v", err)
		}
	})
}

// syncBuffer is a buffer a running command writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// follow starts tail -f as u and returns its output, a stop function and its exit code.
func (u *user) follow(args ...string) (*syncBuffer, func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- plugin.Execute(ctx, genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
			append([]string{"--kubeconfig", u.kubeconfig, "-n", u.ns, "tail", "-f"}, args...))
	}()
	return out, func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(10 * time.Second):
			return -1
		}
	}
}

func TestTailFollow(t *testing.T) {
	u := newUser(t, "get", "create")
	u.conversation(t, "chat", nil)
	appendMessages(t, u, "chat", twoTurns(""))

	out, stop := u.follow("chat", "--lines", "2")
	eventually(t, 20*time.Second, "the last two messages", func() bool { return strings.Contains(out.String(), "Two files") })
	appendMessages(t, u, "chat", []conversation.Message{msg("u2", conversation.RoleUser, text("And in /var?"))})
	eventually(t, 20*time.Second, "the followed message", func() bool { return strings.Contains(out.String(), "And in /var?") })
	appendMessages(t, u, "chat", []conversation.Message{msg("a3", conversation.RoleAssistant, text("Logs."))})
	eventually(t, 20*time.Second, "the second followed message", func() bool { return strings.Contains(out.String(), "Logs.") })
	if code := stop(); code != 0 {
		t.Fatalf("tail -f exited %d after the interrupt", code)
	}
	got := out.String()
	if strings.Contains(got, "What is in /tmp?") || strings.Contains(got, "Let me look.") {
		t.Fatalf("--lines 2 printed more than the last two messages:\n%s", got)
	}
	inOrder(t, got, "tool\n  ◂ result a.txt ⏎ b.txt\n", "assistant\n  Two files", "\nuser\n  And in /var?\n", "assistant\n  Logs.\n")
	if n := strings.Count(got, "And in /var?"); n != 1 {
		t.Fatalf("a followed message printed %d times", n)
	}
}

func TestDescribe(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	u.conversation(t, "chat", func(s *parleyv1alpha1.ConversationSpec) {
		s.Context = parleyv1alpha1.ContextSpec{MaxTokens: ptr.To[int64](2000), Strategy: parleyv1alpha1.CompactionNone}
	})
	appendMessages(t, u, "chat", twoTurns(""))
	_, _, err := u.kp(ctx, "checkpoint", "chat", "--name", "chat-first", "--wait")
	must(t, err)
	// Status follows the appends within a couple of seconds (batched lastActivityTime writes).
	var out string
	eventually(t, 30*time.Second, "describe to show 4 messages", func() bool {
		out, _, err = u.kp(ctx, "describe", "chat")
		return err == nil && strings.Contains(out, "4 messages · 2 turns")
	})
	for _, re := range []string{
		`(?m)^Name:\s+chat$`,
		`(?m)^Namespace:\s+` + u.ns + `$`,
		`(?m)^Phase:\s+Active$`,
		`(?m)^Expires:\s+in (23h59m|1d) \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\) · ttl 1d, then Retain$`,
		`(?m)^History:\s+4 messages · 2 turns · [\d,]+ bytes · epoch 1 · sequence \d+ · .+$`,
		`(?m)^Context:\s+\[█*░*\]\s+\d+%\s+[\d,]+ / 2,000 tokens · no compaction$`,
		`(?m)^  Ready\s+True\s+Active\s+`,
		`(?m)^  HistoryAvailable\s+True\s+HistoryReady\s+`,
		`(?m)^  chat-first\s+Manual\s+2\s+Ready\s+4\s+[\d,]+\s+\d+s$`,
		`(?m)^Events:\n  TYPE\s+REASON\s+AGE\s+MESSAGE\n(  .+\n)*  Normal\s+SessionStarted\s+.*started with its history at `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("describe does not match %s:\n%s", re, out)
		}
	}
	yaml, _, err := u.kp(ctx, "describe", "chat", "-o", "yaml")
	must(t, err)
	inOrder(t, yaml, "apiVersion: parley.dev/v1alpha1", "kind: Conversation", "name: chat", "status:")
}

func TestCheckpointForkAndRewind(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	u.conversation(t, "chat", nil)
	appendMessages(t, u, "chat", twoTurns(""))

	out, _, err := u.kp(ctx, "checkpoint", "chat", "--turn", "1", "--name", "turn-one", "--wait")
	must(t, err)
	inOrder(t, out, "checkpoint.parley.dev/turn-one created\n", "  ready at turn 1: 3 messages, ")

	out, _, err = u.kp(ctx, "fork", "turn-one", "chat-fork")
	must(t, err)
	if out != "conversation.parley.dev/chat-fork created\n" {
		t.Fatalf("fork printed %q", out)
	}
	fork := &parleyv1alpha1.Conversation{}
	must(t, env.admin.Get(ctx, client.ObjectKey{Namespace: u.ns, Name: "chat-fork"}, fork))
	if fork.Spec.ForkFrom == nil || fork.Spec.ForkFrom.Checkpoint != "turn-one" {
		t.Fatalf("the fork's spec.forkFrom is %+v", fork.Spec.ForkFrom)
	}
	out, _, err = u.kp(ctx, "history", "chat-fork")
	must(t, err)
	inOrder(t, out, "· 3 messages · 1 turn ·", "You are the test agent.", "What is in /tmp?", "◂ result a.txt")
	if strings.Contains(out, "Two files") {
		t.Fatalf("the fork of turn 1 holds turn 2:\n%s", out)
	}

	out, _, err = u.kp(ctx, "rewind", "chat", "1")
	must(t, err)
	inOrder(t, out, "conversation.parley.dev/chat-turn-1 created\n", "  chat rewound to turn 1 through checkpoint chat-", "(3 messages); chat is unchanged\n")
	out, _, err = u.kp(ctx, "history", "chat-turn-1")
	must(t, err)
	inOrder(t, out, "· 3 messages · 1 turn ·", "What is in /tmp?")
	// The rewound conversation goes on by itself; the original still has its four messages.
	appendMessages(t, u, "chat-turn-1", []conversation.Message{msg("other-a2", conversation.RoleAssistant, text("Another answer."))})
	out, _, err = u.kp(ctx, "history", "chat-turn-1")
	must(t, err)
	inOrder(t, out, "· 4 messages · 2 turns ·", "Another answer.")
	out, _, err = u.kp(ctx, "history", "chat")
	must(t, err)
	inOrder(t, out, "· 4 messages · 2 turns ·", "Two files")

	_, _, err = u.kp(ctx, "rewind", "chat", "9", "--to", "too-far")
	if err == nil || !strings.Contains(err.Error(), u.ns+"/chat has 2 turn(s): rewind to one of 1..2") {
		t.Fatalf("a rewind past the last turn: %v", err)
	}
	if err := env.admin.Get(ctx, client.ObjectKey{Namespace: u.ns, Name: "too-far"}, &parleyv1alpha1.Conversation{}); err == nil {
		t.Fatal("a failed rewind created its conversation")
	}
	_, _, err = u.kp(ctx, "fork", "no-such-checkpoint", "x")
	if err == nil || !strings.Contains(err.Error(), "checkpoint "+u.ns+"/no-such-checkpoint not found") {
		t.Fatalf("a fork of a missing checkpoint: %v", err)
	}
}

// jsonLines reads a JSONL file as JSON values, line by line.
func jsonLines(t *testing.T, file string) []any {
	t.Helper()
	data, err := os.ReadFile(file)
	must(t, err)
	var out []any
	for l := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var v any
		must(t, json.Unmarshal([]byte(l), &v))
		out = append(out, v)
	}
	return out
}

func TestImportAndExportClaude(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	out, stderr, err := u.kp(ctx, "import", claudeFile, "imported", "--session-id", claudeSession, "--progress", "always")
	must(t, err)
	inOrder(t, out, "conversation.parley.dev/imported imported\n", "  claude: ", " messages, 1 subagent thread(s) from "+claudeFile+" and 1 subagent file(s)\n")
	inOrder(t, stderr, "importing")
	if strings.Contains(stderr, "not carried") {
		t.Fatalf("the import says something was not carried:\n%s", stderr)
	}

	out, _, err = u.kp(ctx, "history", "imported")
	must(t, err)
	inOrder(t, out, "session "+claudeSession, "  │ subagent a9b844f", "  │ assistant")

	dir := t.TempDir()
	out, _, err = u.kp(ctx, "export", "imported", "-o", "claude", "--dir", dir)
	must(t, err)
	written := strings.Split(strings.TrimSpace(out), "\n")
	if len(written) != 2 || !strings.HasSuffix(written[0], "/"+claudeSession+".jsonl") || !strings.HasSuffix(written[1], "/subagents/agent-a9b844f.jsonl") {
		t.Fatalf("export -o claude --dir wrote %v", written)
	}
	// Both files come back as they were read, line for line, compared as JSON: the messages,
	// the line that is no message (carried by POST …/import), the session id, the chain.
	for i, read := range []string{claudeFile, fixtures.Path(fixtures.ClaudeSubagent)} {
		if diff := cmp.Diff(jsonLines(t, read), jsonLines(t, written[i])); diff != "" {
			t.Errorf("%s differs from its export (-read +exported):\n%s", read, diff)
		}
	}

	// history -o claude prints the main transcript and says the subagent's is left out.
	out, stderr, err = u.kp(ctx, "history", "imported", "-o", "claude")
	must(t, err)
	if n := len(strings.Split(strings.TrimSpace(out), "\n")); n != 12 {
		t.Fatalf("history -o claude: %d lines, want the 12 lines of the main transcript", n)
	}
	inOrder(t, stderr, "1 subagent transcript(s) not printed")

	// Importing the same file again into an existing name fails before anything is appended;
	// with --existing it appends into it, and what is stored already is not stored twice.
	before, err := u.direct(t).State(ctx, u.ns, "imported")
	must(t, err)
	_, _, err = u.kp(ctx, "import", claudeFile, "imported")
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("a second import into the same name: %v", err)
	}
	_, _, err = u.kp(ctx, "import", claudeFile, "imported", "--existing")
	must(t, err)
	after, err := u.direct(t).State(ctx, u.ns, "imported")
	must(t, err)
	if len(after.State.Messages) != len(before.State.Messages) || len(after.State.Subagents) != 1 ||
		len(after.State.Subagents[0].Messages) != len(before.State.Subagents[0].Messages) {
		t.Fatalf("the same import again changed the history: %d → %d messages, %d subagent threads",
			len(before.State.Messages), len(after.State.Messages), len(after.State.Subagents))
	}
}

// A transcript of many small lines that are no message (progress, queue operations) fits in
// a few request bodies but holds more items than the Session API takes in one import part:
// the plugin cuts its parts by count too, and the history holds every line.
func TestImportOfManySmallRecords(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	const session = "5d3c2b1a-0f9e-4d8c-a7b6-112233445566"
	records := wire.MaxImportItems + wire.MaxImportItems/4
	var b strings.Builder
	b.WriteString(`{"type":"user","uuid":"aaaaaaaa-0000-4000-8000-000000000001","parentUuid":null,"sessionId":"` + session + `","message":{"role":"user","content":"go"}}` + "\n")
	b.WriteString(`{"type":"assistant","uuid":"aaaaaaaa-0000-4000-8000-000000000002","parentUuid":"aaaaaaaa-0000-4000-8000-000000000001","sessionId":"` + session + `","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"done"}]}}` + "\n")
	for i := range records {
		fmt.Fprintf(&b, `{"type":"progress","n":%d}`+"\n", i)
	}
	file := filepath.Join(t.TempDir(), session+".jsonl")
	must(t, os.WriteFile(file, []byte(b.String()), 0o600))

	_, _, err := u.kp(ctx, "import", file, "many", "--format", "claude")
	must(t, err)
	st, err := u.direct(t).State(ctx, u.ns, "many")
	must(t, err)
	if got := len(st.State.Records); len(st.State.Messages) != 2 || got != records {
		t.Fatalf("the history holds %d messages and %d records, want 2 and %d", len(st.State.Messages), got, records)
	}
	for i, r := range st.State.Records {
		if want := fmt.Sprintf(`{"type":"progress","n":%d}`, i); string(r.Raw) != want {
			t.Fatalf("record %d is %s, want %s", i, r.Raw, want)
		}
	}
}

func TestImportAndExportOpenCode(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	out, _, err := u.kp(ctx, "import", openCodeFile, "oc", "--system-prompt", "You are OpenCode.")
	must(t, err)
	inOrder(t, out, "conversation.parley.dev/oc imported\n", "  opencode: ")
	var src map[string]any
	data, err := os.ReadFile(openCodeFile)
	must(t, err)
	must(t, json.Unmarshal(data, &src))
	sessionID := src["info"].(map[string]any)["id"].(string)

	out, _, err = u.kp(ctx, "export", "oc", "-o", "opencode", "--session-id", sessionID)
	must(t, err)
	var got map[string]any
	must(t, json.Unmarshal([]byte(out), &got))
	// The export comes back whole, compared as JSON: the session's info, every message and part.
	if diff := cmp.Diff(src, got); diff != "" {
		t.Fatalf("the export differs from the OpenCode export read (-read +exported):\n%s", diff)
	}
	out, _, err = u.kp(ctx, "history", "oc")
	must(t, err)
	inOrder(t, out, "system\n  You are OpenCode.\n", "── turn 1 ")
}

func TestCompactAndTailAcrossTheEpoch(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	u.conversation(t, "long", func(s *parleyv1alpha1.ConversationSpec) {
		s.Context = parleyv1alpha1.ContextSpec{
			// About 315 tokens: under the 95 % that would start a compaction by itself, over the
			// budget a requested one folds down to (maxTokens × compactAtPercent / 200 = 237).
			MaxTokens: ptr.To[int64](500), CompactAtPercent: 95, Strategy: parleyv1alpha1.CompactionSlidingWindow, KeepRecentMessages: 2,
		}
	})
	for i := range 3 {
		appendMessages(t, u, "long", twoTurns(fmt.Sprintf("r%d-", i)))
	}
	out, stop := u.follow("long", "--lines", "1")
	eventually(t, 20*time.Second, "tail's first message", func() bool { return strings.Contains(out.String(), "Two files") })

	res, _, err := u.kp(ctx, "compact", "long", "--wait")
	must(t, err)
	inOrder(t, res, "conversation.parley.dev/long compaction requested at ", "  compacted (SlidingWindow): ", " messages folded, checkpoint long-compact-e1\n")

	eventually(t, 30*time.Second, "tail to see the new epoch", func() bool { return strings.Contains(out.String(), "── compacted: a new epoch starts ──") })
	appendMessages(t, u, "long", []conversation.Message{msg("after", conversation.RoleUser, text("After the compaction."))})
	eventually(t, 20*time.Second, "tail to print a message of the new epoch", func() bool { return strings.Contains(out.String(), "After the compaction.") })
	if code := stop(); code != 0 {
		t.Fatalf("tail -f exited %d", code)
	}
	if n := strings.Count(out.String(), "Two files"); n != 1 {
		t.Fatalf("tail printed a kept message again after the compaction (%d times):\n%s", n, out.String())
	}
	hist, _, err := u.kp(ctx, "history", "long")
	must(t, err)
	inOrder(t, hist, "· epoch 2 ·", "After the compaction.")
}

func TestSuspendAndResume(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	u.conversation(t, "chat", nil)
	get := func() *parleyv1alpha1.Conversation {
		c := &parleyv1alpha1.Conversation{}
		must(t, env.admin.Get(ctx, client.ObjectKey{Namespace: u.ns, Name: "chat"}, c))
		return c
	}
	out, _, err := u.kp(ctx, "suspend", "chat")
	must(t, err)
	if out != "conversation.parley.dev/chat suspended\n" || get().Spec.Suspend == nil || !*get().Spec.Suspend {
		t.Fatalf("suspend printed %q; spec.suspend %v", out, get().Spec.Suspend)
	}
	eventually(t, 20*time.Second, "phase Suspended", func() bool { return get().Status.Phase == parleyv1alpha1.ConversationSuspended })
	out, _, err = u.kp(ctx, "resume", "chat", "-o", "name")
	must(t, err)
	if out != "conversation.parley.dev/chat\n" || get().Spec.Suspend == nil || *get().Spec.Suspend {
		t.Fatalf("resume printed %q; spec.suspend %v", out, get().Spec.Suspend)
	}
	eventually(t, 20*time.Second, "phase Active", func() bool { return get().Status.Phase == parleyv1alpha1.ConversationActive })
}

// reset clears the history after a Reset Checkpoint keeps it; fork brings it back.
func TestReset(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create", "delete")
	u.conversation(t, "chat", nil)
	appendMessages(t, u, "chat", twoTurns(""))

	reader := newUser(t, "get", "create") // no delete: no reset
	reader.conversation(t, "chat", nil)
	_, _, err := reader.kp(ctx, "reset", "chat")
	if err == nil || !strings.Contains(err.Error(), "may not delete conversations/history") || !strings.Contains(err.Error(), "reset needs delete") {
		t.Fatalf("reset without delete: %v", err)
	}

	out, _, err := u.kp(ctx, "reset", "chat", "--keep-system")
	must(t, err)
	m := regexp.MustCompile(`^conversation\.parley\.dev/chat reset: 4 message\(s\) cleared, epoch 2; the history before it is in checkpoint (\S+) \(kubectl parley fork \S+ NEW-NAME brings it back\)\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("reset printed %q", out)
	}
	hist, _, err := u.kp(ctx, "history", "chat")
	must(t, err)
	inOrder(t, hist, "· epoch 2 · 0 messages · 0 turns ·", "system\n  You are the test agent.\n")
	_, _, err = u.kp(ctx, "fork", m[1], "chat-before-reset")
	must(t, err)
	hist, _, err = u.kp(ctx, "history", "chat-before-reset")
	must(t, err)
	inOrder(t, hist, "· 4 messages · 2 turns ·", "Two files")
}

// The built binary, found by kubectl on PATH as plugins are.
func TestKubectlFindsThePlugin(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl on PATH")
	}
	ctx := context.Background()
	u := newUser(t, "get", "create")
	u.conversation(t, "chat", nil)
	appendMessages(t, u, "chat", twoTurns(""))

	bin := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "kubectl-parley"), "github.com/parley-dev/parley/cmd/kubectl-parley")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	kubeconfig := u.kubeconfig
	run := func(args ...string) string {
		cmd := exec.CommandContext(ctx, kubectl, args...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	inOrder(t, run("parley", "--help"), "kubectl parley [command]", "history", "tail")
	inOrder(t, run("parley", "history", "chat", "-n", u.ns), "4 messages", "Two files")
	inOrder(t, run("parley", "version"), "kubectl-parley ")
	// A plain kubectl user reads the messages through the aggregated group.
	inOrder(t, run("get", "--raw", wire.AggregatedPath+wire.ConversationSubpath(u.ns, "chat")+"/messages"), `"messages"`, "Two files")
	// The same with the admin's client-certificate kubeconfig; "conversations" still means
	// parley.dev's Conversations (the aggregated group ranks below CRDs).
	kubeconfig = env.adminKubeconfig
	inOrder(t, run("parley", "history", "chat", "-n", u.ns), "4 messages", "Two files")
	inOrder(t, run("get", "conversations", "-n", u.ns, "-o", "jsonpath={.items[0].apiVersion}"), "parley.dev/v1alpha1")
}
