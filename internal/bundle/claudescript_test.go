package bundle_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	corev1 "k8s.io/api/core/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/bundle"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/test/support/repopath"
)

const scriptSession = "5b1c9e2a-7d40-4f3e-9a61-0c2d3e4f5a6b"

// claudeStub stands in for the Claude CLI: it writes what it was given (arguments, working
// directory, config folder, whether it may write there, the transcripts it finds) to $STUB_OUT.
const claudeStub = `#!/usr/bin/env bash
{
  echo "args=$*"
  echo "cwd=$(pwd -P)"
  if touch "$CLAUDE_CONFIG_DIR/.saved" 2>/dev/null; then echo writable=yes; else echo writable=no; fi
  (cd "$CLAUDE_CONFIG_DIR" && find . -name '*.jsonl' | sort | sed 's|^\./|transcript=|')
} >"$STUB_OUT"
`

// claudeScript is the shell block docs/resume-bundle.md gives Claude CLI agents.
func claudeScript(t *testing.T) string {
	t.Helper()
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "resume-bundle.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\\*\\*Claude Code CLI / Claude Agent SDK\\*\\*.*?```sh\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/resume-bundle.md has no sh block after **Claude Code CLI / Claude Agent SDK**")
	}
	return string(m[1])
}

// TestClaudeScriptRuns runs the documented Claude CLI script as an agent container would: with
// bash and jq, in the environment internal/agentpod gives the container, against the bundle
// laid out as the kubelet mounts it (read-only), with a stub claude on the PATH.
func TestClaudeScriptRuns(t *testing.T) {
	for _, bin := range []string{"bash", "jq"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("the script needs %s, which is not on the PATH (apt-get install %s)", bin, bin)
		}
	}
	script := claudeScript(t)
	empty := conversation.NewState(scriptSession)
	threeTurns := conversation.NewState(scriptSession)
	for i, text := range []string{"plan the release", "done: v1 planned", "tag it", "tagged", "announce it", "announced"} {
		role := conversation.RoleUser
		if i%2 == 1 {
			role = conversation.RoleAssistant
		}
		threeTurns.Messages = append(threeTurns.Messages, conversation.Message{
			ID: "m" + string(rune('a'+i)), Role: role, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: text}},
		})
	}
	for _, tc := range []struct {
		name           string
		state          *conversation.State
		attempt        int32 // the pod's (1 for the first)
		wantFlag       string
		wantTranscript bool
	}{
		{"first pod", &empty, 1, "--session-id", false},
		{"crash before the first message", &empty, 2, "--session-id", false},
		{"crash after three turns", &threeTurns, 2, "--resume", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			work := filepath.Join(dir, "workspace")
			mount := filepath.Join(dir, "mount")
			stubs := filepath.Join(dir, "bin")
			for _, d := range []string{work, mount, stubs} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(stubs, "claude"), []byte(claudeStub), 0o755); err != nil {
				t.Fatal(err)
			}
			conv := &parleyv1alpha1.Conversation{}
			conv.Name, conv.Namespace, conv.Status.SessionID = "release-bot", "agents", scriptSession
			container := corev1.Container{Name: "agent", Image: "agent:1", WorkingDir: work}
			conv.Spec.Agent = &parleyv1alpha1.AgentSpec{
				Adapter: parleyv1alpha1.AdapterClaudeAgentSDK, ResumeMountPath: mount,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{container}}},
			}
			files, err := bundle.Build(bundle.InputFor(conv, tc.state, tc.attempt-1, ""))
			if err != nil {
				t.Fatal(err)
			}
			mountReadOnly(t, mount, files)

			_, items := files.ConfigMapData()
			pod, err := agentpod.Build(&conv.Spec.Agent.Template, agentpod.Params{
				Conversation: conv.Name, Namespace: conv.Namespace, SessionID: scriptSession,
				Attempt: tc.attempt, Resume: tc.attempt > 1, APIURL: "https://parley-session-api.parley-system.svc:8082",
				CAInBundle: true, MountPath: mount, BundleName: "release-bot-bundle", BundleItems: items,
				ClaudeConfig: bundle.ClaudeDir,
			})
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "claude.out")
			env := make([]string, 0, 5+len(pod.Spec.Containers[0].Env))
			env = append(env, "PATH="+stubs+":"+os.Getenv("PATH"), "HOME="+dir, "TMPDIR="+dir,
				"PROMPT=what next?", "STUB_OUT="+out)
			for _, e := range pod.Spec.Containers[0].Env {
				env = append(env, e.Name+"="+e.Value)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", script)
			cmd.Dir, cmd.Env = dir, env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("the script failed: %v\n%s", err, stderr.String())
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("the script did not run claude: %v\n%s", err, stderr.String())
			}
			want := []string{
				"args=-p what next? " + tc.wantFlag + " " + scriptSession,
				"cwd=" + realPath(t, work),
				"writable=yes",
			}
			if tc.wantTranscript {
				var m bundle.Manifest
				if err := json.Unmarshal(files[bundle.ConversationFile], &m); err != nil {
					t.Fatal(err)
				}
				want = append(want, "transcript="+strings.TrimPrefix(m.Claude.Transcript, bundle.ClaudeDir+"/"))
			}
			if g := strings.TrimSpace(string(got)); g != strings.Join(want, "\n") {
				t.Errorf("claude ran with\n%s\nwant\n%s\n(stderr: %s)", g, strings.Join(want, "\n"), stderr.String())
			}
			if tc.wantTranscript && path.Base(strings.Fields(want[3])[0]) != scriptSession+".jsonl" {
				t.Errorf("the transcript %s is not the session's", want[3])
			}
		})
	}
}

// mountReadOnly lays the bundle out as the kubelet mounts a configMap volume with the items
// of ConfigMapData, and takes the write permission away (for a test not run as root).
func mountReadOnly(t *testing.T, dir string, files bundle.Files) {
	t.Helper()
	data, items := files.ConfigMapData()
	for _, item := range items {
		full := filepath.Join(dir, filepath.FromSlash(item.Path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data[item.Key]), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for _, d := range dirs {
		_ = os.Chmod(d, 0o555)
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			_ = os.Chmod(d, 0o755)
		}
	})
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
