package bundle

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/test/fixtures"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from the current output")

// Session ids of the cases: not the fixture's own, so the tests show the transcript is
// written under the conversation's id.
const (
	sessionClaude = "0d6a5f4e-2c1b-4a8e-9f00-5b3c2d1e0f9a"
	sessionOpenAI = "7e3f2a10-88c4-4b6d-a1e2-3c4d5e6f7a8b"
)

// fixtureState is the real Claude Code transcript of test/fixtures (a session with a
// skill, a subagent started by the Task tool, and a file write), imported.
func fixtureState(t testing.TB) *conversation.State {
	t.Helper()
	s, err := conversation.ImportClaudeSession(fixtures.Read(t, fixtures.ClaudeMain),
		conversation.ClaudeSubagentFile{AgentID: "a9b844f", Data: fixtures.Read(t, fixtures.ClaudeSubagent)})
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

// openAIState is a conversation that came in as OpenAI messages: tool calls and results, an
// error result, non-ASCII text, and no times on any message.
func openAIState(t testing.TB) *conversation.State {
	t.Helper()
	var msgs []conversation.OpenAIMessage
	if err := json.Unmarshal(readTestdata(t, "openai-tools.json"), &msgs); err != nil {
		t.Fatal(err)
	}
	s, err := conversation.FromOpenAI(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// goldenCases are the bundles kept byte for byte in testdata/golden/<name>/.
func goldenCases(t testing.TB) map[string]Input {
	claudeFixture := fixtureState(t)
	claudeFixture.Adapters = append(claudeFixture.Adapters, &conversation.ClaudeAgentSDKState{
		SessionID: sessionClaude, WorkspacePath: "/workspace/project", MessageCount: 11,
	})
	return map[string]Input{
		"claude-fixture": {
			State: claudeFixture, SessionID: sessionClaude, Conversation: "release-bot", Namespace: "agents",
			Adapter: parleyv1alpha1.AdapterClaudeAgentSDK, Checkpoint: "release-bot-crash-3", Attempt: 2,
			WorkingDir: "/workspace", ClaudeConfigDir: "/var/run/parley/claude",
		},
		"generic-openai": {
			State: openAIState(t), SessionID: sessionOpenAI, Conversation: "tagger", Namespace: "default",
			Adapter: parleyv1alpha1.AdapterGeneric,
		},
		"claude-openai-long-cwd": {
			State: openAIState(t), SessionID: sessionOpenAI, Conversation: "tagger", Namespace: "default",
			Adapter: parleyv1alpha1.AdapterClaudeAgentSDK, Attempt: 1, ClaudeConfigDir: "/var/run/parley/claude",
			WorkingDir: "/srv/équipe/" + strings.Repeat("projet-très-long/", 12) + "🚀",
		},
	}
}

// TestGolden: each bundle is exactly the files in testdata/golden/<case>, byte for byte.
// Run with -update to rewrite them, then review the diff.
func TestGolden(t *testing.T) {
	for name, in := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			files, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", "golden", name)
			if *update {
				writeGolden(t, dir, files)
			}
			want := readTree(t, dir)
			for _, p := range files.Paths() {
				w, ok := want[p]
				switch {
				case !ok:
					t.Errorf("%s: not in the golden files", p)
				case !bytes.Equal(files[p], w):
					t.Errorf("%s differs from the golden file:\n got %.400s\nwant %.400s", p, files[p], w)
				}
			}
			for p := range want {
				if _, ok := files[p]; !ok {
					t.Errorf("%s: golden file not built", p)
				}
			}
		})
	}
}

func writeGolden(t *testing.T, dir string, files Files) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, files)
}

// writeFiles writes the bundle under dir as a mount would show it.
func writeFiles(t testing.TB, dir string, files Files) {
	t.Helper()
	for _, p := range files.Paths() {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree reads every file under dir, keyed by its slash-separated path relative to dir.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
