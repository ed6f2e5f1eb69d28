package bundle

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
)

// The real Claude Code CLI resumes sessions from bundles built here. hack/claude-code.sh
// installs each pinned release (Makefile CLAUDE_CODE_VERSIONS) into bin/claude-code/<version>;
// PARLEY_CLAUDE_CODE names another folder of that layout.

// resumePrompt is the new prompt of every resume; the request that ends with it is the one
// checked.
const resumePrompt = "parley resume check: continue"

type claudeCLI struct{ version, path string }

// claudeCLIs are the installed releases. A release that could not be installed skips the
// test with the reason, except in CI, which must have them all.
func claudeCLIs(t *testing.T) []claudeCLI {
	t.Helper()
	dir := os.Getenv("PARLEY_CLAUDE_CODE")
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "claude-code")
	}
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (CI must run the real Claude Code CLI)", msg)
		}
		t.Skip(msg)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		unavailable("Claude Code CLI not installed in %s: run make claude-code (npm install of @anthropic-ai/claude-code)", dir)
	}
	clis := make([]claudeCLI, 0, len(entries))
	for _, e := range entries {
		if why, err := os.ReadFile(filepath.Join(dir, e.Name(), "UNAVAILABLE")); err == nil {
			unavailable("Claude Code %s could not be installed: %s", e.Name(), strings.TrimSpace(string(why)))
		}
		p, err := filepath.Abs(filepath.Join(dir, e.Name(), "claude"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err != nil {
			unavailable("Claude Code %s: %v", e.Name(), err)
		}
		clis = append(clis, claudeCLI{version: e.Name(), path: p})
	}
	return clis
}

// cliCase is a conversation and the working directory the agent runs in.
type cliCase struct {
	name  string
	state func(t testing.TB) *conversation.State
	// dirs makes the working directory under base and returns the path the pod would be
	// given (its workingDir) and the directory the process really runs in.
	dirs func(t *testing.T, base string) (workingDir, runIn string)
	// realPath is given to Build: what the agent does in its pod for a symlinked workingDir.
	realPath func(string) (string, error)
	// notFoundIn are the releases that must not find the session (a control showing the
	// test can fail); the case is skipped on the others.
	notFoundIn []string
}

func mkdir(t *testing.T, p string) string {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func plainDir(elems ...string) func(t *testing.T, base string) (string, string) {
	return func(t *testing.T, base string) (string, string) {
		p := mkdir(t, filepath.Join(append([]string{base}, elems...)...))
		return p, p
	}
}

// symlinkedDir is base/link/project where base/link points at base/real.
func symlinkedDir(t *testing.T, base string) (string, string) {
	target := mkdir(t, filepath.Join(base, "real", "project"))
	if err := os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(base, "link", "project"), target
}

// longSegment is 60 characters; four of them make a path past the CLI's 200-unit limit.
var longSegment = "a-directory-name-of-sixty-characters-for-the-long-path-case-"[:60]

func cliCases() []cliCase {
	return []cliCase{
		{name: "fixture transcript", state: fixtureState, dirs: plainDir("workspace")},
		{name: "no timestamps, non-ASCII cwd", state: openAIState, dirs: plainDir("équipe 🚀 日本")},
		{name: "cwd longer than 200 units", state: fixtureState, dirs: plainDir(longSegment, longSegment, longSegment, longSegment+"é")},
		{name: "cwd through a symlink, resolved", state: fixtureState, dirs: symlinkedDir, realPath: filepath.EvalSymlinks},
		// 2.1.197 looks only in the folder named after the real cwd; 2.1.330 also searches
		// the other project folders for the session id, so there the control proves nothing.
		{name: "control: cwd through a symlink, not resolved", state: fixtureState, dirs: symlinkedDir, notFoundIn: []string{"2.1.197"}},
	}
}

// TestClaudeCLIResumesBundle: for each installed Claude Code release, a bundle built from a
// conversation is mounted the way a configMap volume lays it out, the CLI is started in the
// working directory with CLAUDE_CONFIG_DIR at the bundle's claude directory and
// --resume <session id>, and the request it sends to a local Messages API stub must hold every
// earlier message, tool call and tool result, in order, then the new prompt.
func TestClaudeCLIResumesBundle(t *testing.T) {
	clis := claudeCLIs(t)
	for _, cli := range clis {
		t.Run(cli.version, func(t *testing.T) {
			for _, tc := range cliCases() {
				t.Run(tc.name, func(t *testing.T) { runResume(t, cli, tc) })
			}
		})
	}
}

func runResume(t *testing.T, cli claudeCLI, tc cliCase) {
	notFound := slices.Contains(tc.notFoundIn, cli.version)
	if tc.notFoundIn != nil && !notFound {
		t.Skipf("a control for %v only", tc.notFoundIn)
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	workingDir, runIn := tc.dirs(t, base)
	state := tc.state(t)
	files, err := Build(Input{
		State: state, SessionID: sessionClaude, Conversation: "cli", Namespace: "test",
		Adapter: parleyv1alpha1.AdapterClaudeAgentSDK, WorkingDir: workingDir, RealPath: tc.realPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	mount := mountConfigMap(t, filepath.Join(base, "mount"), files)
	stub := newMessagesStub(t)
	out, runErr := runClaude(t, cli, stub.URL, filepath.Join(mount, ClaudeDir), runIn)
	if notFound {
		if runErr == nil || !strings.Contains(out, "No conversation found") {
			t.Fatalf("the CLI resumed a session filed under the unresolved path (err %v):\n%s", runErr, out)
		}
		return
	}
	if runErr != nil {
		t.Fatalf("claude %s: %v\n%s", cli.version, runErr, out)
	}
	var result struct {
		IsError   bool   `json:"is_error"`
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &result, jsontext.AllowDuplicateNames(true)); err != nil || result.IsError || result.SessionID != sessionClaude {
		t.Fatalf("result %+v (%v):\n%s", result, err, out)
	}
	req := resumeRequest(t, stub.bodies())
	want := anthropicItems(t, files[AnthropicFile])
	got := req[:len(req)-1]
	if last := req[len(req)-1]; last != "user:text:"+resumePrompt {
		t.Errorf("last item %q, want the new prompt", last)
	}
	if missing := notInOrder(want, got); missing != "" {
		t.Fatalf("the request lacks %q (or has it out of order); request items:\n%s", missing, strings.Join(got, "\n"))
	}
	// The CLI continued the bundle's session file in the bundle's project folder.
	projects, err := os.ReadDir(filepath.Join(mount, ClaudeDir, "projects"))
	if err != nil || len(projects) != 1 {
		t.Fatalf("project folders %v (%v)", projects, err)
	}
	var m Manifest
	if err := json.Unmarshal(files[ConversationFile], &m); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(filepath.Join(mount, filepath.FromSlash(m.Claude.Transcript)))
	if err != nil || len(after) <= len(files[m.Claude.Transcript]) {
		t.Errorf("the CLI did not append to %s (%d bytes before, %d after, %v)", m.Claude.Transcript, len(files[m.Claude.Transcript]), len(after), err)
	}
	t.Logf("claude %s resumed %d earlier items from %s", cli.version, len(want), m.Claude.Transcript)
}

// mountConfigMap lays the bundle out as the kubelet does for a configMap volume with the
// items of ConfigMapData: each key's data at its item path.
func mountConfigMap(t *testing.T, dir string, files Files) string {
	t.Helper()
	data, items := files.ConfigMapData()
	for _, item := range items {
		full := filepath.Join(dir, filepath.FromSlash(item.Path))
		mkdir(t, filepath.Dir(full))
		if err := os.WriteFile(full, []byte(data[item.Key]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runClaude runs `claude -p PROMPT --resume <session>` in dir with nothing from the test's
// own environment but PATH, offline against the stub.
func runClaude(t *testing.T, cli claudeCLI, baseURL, configDir, dir string) (string, error) {
	t.Helper()
	home := mkdir(t, filepath.Join(t.TempDir(), "home"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli.path, "-p", resumePrompt, "--resume", sessionClaude, "--output-format", "json")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home + "/.config", "XDG_CACHE_HOME=" + home + "/.cache",
		"ANTHROPIC_BASE_URL=" + baseURL, "ANTHROPIC_API_KEY=parley-test-key", "CLAUDE_CONFIG_DIR=" + configDir,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1",
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// resumeRequest is the items of the last request that ends with the resume prompt.
func resumeRequest(t *testing.T, bodies [][]byte) []string {
	t.Helper()
	for i := len(bodies) - 1; i >= 0; i-- {
		var req struct {
			Messages []conversation.AnthropicMessage `json:"messages"`
		}
		if err := json.Unmarshal(bodies[i], &req, jsontext.AllowDuplicateNames(true)); err != nil {
			continue
		}
		items := itemsOf(t, req.Messages)
		if len(items) > 0 && strings.HasSuffix(items[len(items)-1], resumePrompt) {
			return items
		}
	}
	t.Fatalf("no request ended with the resume prompt (%d requests)", len(bodies))
	return nil
}

func anthropicItems(t *testing.T, rendered []byte) []string {
	t.Helper()
	var conv conversation.AnthropicConversation
	if err := json.Unmarshal(rendered, &conv); err != nil {
		t.Fatal(err)
	}
	return itemsOf(t, conv.Messages)
}

// itemsOf flattens messages to one line per content block that the resume must keep:
// role, type and what identifies the block (text, tool call id and name, result's call id).
// What the CLI adds on its own is left out: <system-reminder> text blocks, and the
// role:"system" context messages newer releases put in the list.
func itemsOf(t *testing.T, msgs []conversation.AnthropicMessage) []string {
	t.Helper()
	var items []string
	for _, m := range msgs {
		if m.Role == "system" {
			continue
		}
		if m.Content.Kind() == '"' {
			var s string
			if err := json.Unmarshal(m.Content, &s); err != nil {
				t.Fatal(err)
			}
			items = append(items, m.Role+":text:"+s)
			continue
		}
		var blocks []struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			ID        string `json:"id"`
			Name      string `json:"name"`
			ToolUseID string `json:"tool_use_id"`
		}
		if err := json.Unmarshal(m.Content, &blocks, jsontext.AllowDuplicateNames(true)); err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				if strings.HasPrefix(b.Text, "<system-reminder>") {
					continue
				}
				items = append(items, m.Role+":text:"+b.Text)
			case "tool_use":
				items = append(items, m.Role+":tool_use:"+b.ID) // the CLI renames tools (Task is Agent now)
			case "tool_result":
				items = append(items, m.Role+":tool_result:"+b.ToolUseID)
			default:
				items = append(items, m.Role+":"+b.Type)
			}
		}
	}
	return items
}

// notInOrder returns the first item of want that does not appear in got after the ones
// before it ("" when want is a subsequence of got).
func notInOrder(want, got []string) string {
	i := 0
	for _, w := range want {
		j := slices.Index(got[i:], w)
		if j < 0 {
			return w
		}
		i += j + 1
	}
	return ""
}
