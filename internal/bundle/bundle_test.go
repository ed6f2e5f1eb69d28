package bundle

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
)

func claudeInput(t testing.TB) Input {
	return Input{
		State: openAIState(t), SessionID: sessionOpenAI, Conversation: "c", Namespace: "n",
		Adapter: parleyv1alpha1.AdapterClaudeAgentSDK, WorkingDir: "/workspace",
	}
}

func manifestOf(t *testing.T, files Files) Manifest {
	t.Helper()
	var m Manifest
	if err := json.Unmarshal(files[ConversationFile], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBuildRefuses: input that cannot make a bundle the agent can use is refused with
// ErrInput and a reason, never a bundle the CLI would not find.
func TestBuildRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(in *Input)
		reason string
	}{
		{"no state", func(in *Input) { in.State = nil }, "no state"},
		{"no session id", func(in *Input) { in.SessionID = ""; in.State.SessionID = "" }, "no session id"},
		{"session id the CLI cannot resume", func(in *Input) { in.SessionID = "../../etc" }, "by UUID"},
		{"session id not in canonical form", func(in *Input) { in.SessionID = strings.ToUpper(sessionOpenAI) }, "by UUID"},
		{"no working directory", func(in *Input) { in.WorkingDir = "" }, "set workingDir"},
		{"relative working directory", func(in *Input) { in.WorkingDir = "work" }, "not absolute"},
		{"working directory that does not resolve", func(in *Input) {
			in.RealPath = func(string) (string, error) { return "", errors.New("no such file or directory") }
		}, "no such file"},
		{"invalid UTF-8", func(in *Input) {
			in.State.Records = append(in.State.Records, conversation.RawRecord{Raw: []byte("{\"type\":\"x\",\"v\":\"\xff\"}")})
		}, "invalid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := claudeInput(t)
			tc.edit(&in)
			files, err := Build(in)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err %v, want ErrInput saying %q", err, tc.reason)
			}
			if files != nil {
				t.Errorf("files with an error: %v", files.Paths())
			}
		})
	}
}

// TestClaudeWorkingDir: the transcript is filed under the directory the SDK runs in.
func TestClaudeWorkingDir(t *testing.T) {
	reported := func(p string) conversation.AdapterState {
		return &conversation.ClaudeAgentSDKState{SessionID: sessionOpenAI, WorkspacePath: p}
	}
	for _, tc := range []struct {
		name     string
		edit     func(in *Input)
		wantCWD  string
		wantPath string
	}{
		{"the container's workingDir", func(*Input) {}, "/workspace", "claude/projects/-workspace/" + sessionOpenAI + ".jsonl"},
		{"the SDK's reported workspacePath wins", func(in *Input) {
			in.State.Adapters = conversation.AdapterStates{reported("/workspace/app")}
		}, "/workspace/app", "claude/projects/-workspace-app/" + sessionOpenAI + ".jsonl"},
		{"an explicit adapter state wins over the state's", func(in *Input) {
			in.State.Adapters = conversation.AdapterStates{reported("/old")}
			in.AdapterState = reported("/new")
		}, "/new", "claude/projects/-new/" + sessionOpenAI + ".jsonl"},
		{"the latest Claude state that has a path, past other adapters", func(in *Input) {
			in.State.Adapters = conversation.AdapterStates{reported("/first"), reported(""), &conversation.GenericAdapterState{AdapterType: "x"}}
		}, "/first", "claude/projects/-first/" + sessionOpenAI + ".jsonl"},
		{"a reported path that is not absolute is passed over: an agent cannot keep the next from starting", func(in *Input) {
			in.State.Adapters = conversation.AdapterStates{reported("/first"), reported("relative/dir")}
			in.AdapterState = reported("..")
		}, "/first", "claude/projects/-first/" + sessionOpenAI + ".jsonl"},
		{"resolved through RealPath", func(in *Input) {
			in.RealPath = func(p string) (string, error) { return "/data/real" + p, nil }
		}, "/data/real/workspace", "claude/projects/-data-real-workspace/" + sessionOpenAI + ".jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := claudeInput(t)
			tc.edit(&in)
			files, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := files[tc.wantPath]; !ok {
				t.Fatalf("no %s in %v", tc.wantPath, files.Paths())
			}
			m := manifestOf(t, files)
			if m.Claude == nil || m.Claude.CWD != tc.wantCWD || m.Claude.Transcript != tc.wantPath || m.Claude.SessionID != sessionOpenAI {
				t.Errorf("claude %+v", m.Claude)
			}
			if !bytes.Contains(files[tc.wantPath], []byte(`"cwd":"`+tc.wantCWD+`"`)) {
				t.Errorf("transcript lines do not carry cwd %s", tc.wantCWD)
			}
		})
	}
}

// TestBuildAdapters: only claude-agent-sdk gets a Claude directory, and only with history to
// resume; every bundle has the three files.
func TestBuildAdapters(t *testing.T) {
	for _, tc := range []struct {
		name       string
		adapter    parleyv1alpha1.AgentAdapter
		empty      bool
		wantClaude bool // a claude directory
		wantResume bool // a claude object in conversation.json
	}{
		{"generic", parleyv1alpha1.AdapterGeneric, false, false, false},
		{"unset is generic", "", false, false, false},
		{"openai", parleyv1alpha1.AdapterOpenAI, false, false, false},
		{"claude-agent-sdk", parleyv1alpha1.AdapterClaudeAgentSDK, false, true, true},
		{"claude-agent-sdk, no history yet", parleyv1alpha1.AdapterClaudeAgentSDK, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := claudeInput(t)
			in.Adapter = tc.adapter
			if tc.empty {
				s := conversation.NewState(sessionOpenAI)
				in.State, in.WorkingDir = &s, ""
			}
			files, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			claude := 0
			for _, p := range files.Paths() {
				if strings.HasPrefix(p, ClaudeDir+"/") {
					claude++
				}
			}
			for _, p := range []string{ConversationFile, OpenAIFile, AnthropicFile} {
				if len(files[p]) == 0 {
					t.Errorf("no %s", p)
				}
			}
			if (claude > 0) != tc.wantClaude || len(files) != 3+claude {
				t.Errorf("files %v", files.Paths())
			}
			m := manifestOf(t, files)
			wantAdapter := string(tc.adapter)
			if wantAdapter == "" {
				wantAdapter = "generic"
			}
			if m.Adapter != wantAdapter || (m.Claude != nil) != tc.wantResume {
				t.Errorf("manifest adapter %q claude %+v", m.Adapter, m.Claude)
			}
			if m.Claude != nil && (m.Claude.SessionID != sessionOpenAI || (m.Claude.Transcript != "") != tc.wantClaude) {
				t.Errorf("manifest claude %+v: session id, and a transcript only with a claude directory", m.Claude)
			}
		})
	}
}

// TestManifest: conversation.json carries who and where, and the state under the
// conversation's session id, without changing the caller's state.
func TestManifest(t *testing.T) {
	in := claudeInput(t)
	in.State.SessionID = "imported-id"
	in.Checkpoint, in.Attempt = "c-crash-1", 3
	in.AdapterState = &conversation.GenericAdapterState{AdapterType: "mine", SessionID: "x", CanResume: true, Data: []byte(`{"k":1}`)}
	files, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	m := manifestOf(t, files)
	if m.Format != Format || m.Version != Version || m.Conversation != "c" || m.Namespace != "n" ||
		m.SessionID != sessionOpenAI || m.Checkpoint != "c-crash-1" || m.Attempt != 3 || !m.Resume ||
		m.Messages != 7 || m.Turns != 4 {
		t.Errorf("manifest %+v", m)
	}
	if m.State.SessionID != sessionOpenAI || len(m.State.Messages) != 7 || m.State.System.Text() != "You are a careful release assistant." {
		t.Errorf("state %+v", m.State)
	}
	if m.AdapterState == nil || m.AdapterState.Type != "mine" || !bytes.Contains(m.AdapterState.State, []byte(`"data":{"k":1}`)) {
		t.Errorf("adapter state %+v", m.AdapterState)
	}
	if in.State.SessionID != "imported-id" {
		t.Error("Build changed the caller's state")
	}
}

// TestRenderings: the provider files are the pkg/conversation renderings of the state.
func TestRenderings(t *testing.T) {
	in := claudeInput(t)
	files, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	var openai []conversation.OpenAIMessage
	if err := json.Unmarshal(files[OpenAIFile], &openai); err != nil {
		t.Fatal(err)
	}
	roles := make([]string, 0, len(openai))
	for _, m := range openai {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,tool,assistant,tool,assistant,user" {
		t.Errorf("openai roles %s", got)
	}
	var anthropic conversation.AnthropicConversation
	if err := json.Unmarshal(files[AnthropicFile], &anthropic); err != nil {
		t.Fatal(err)
	}
	if len(anthropic.Messages) != 7 || len(anthropic.System) == 0 {
		t.Errorf("anthropic %d messages, system %s", len(anthropic.Messages), anthropic.System)
	}
}

// TestBuildDeterministic: the same input gives the same bytes (the controller compares the
// ConfigMap it would write with the one it has).
func TestBuildDeterministic(t *testing.T) {
	for name, in := range goldenCases(t) {
		a, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		for p := range a {
			if !bytes.Equal(a[p], b[p]) {
				t.Errorf("%s: %s differs between two builds", name, p)
			}
		}
	}
}

func TestSize(t *testing.T) {
	if (Files{}).Size() != 0 {
		t.Error("empty bundle has a size")
	}
	f := Files{"a": []byte("12345"), "b/c": []byte("678"), "d": nil}
	if f.Size() != 8 {
		t.Errorf("size %d", f.Size())
	}
}
