// Package bundle builds the resume bundle: the files an agent pod finds mounted at
// spec.agent.resumeMountPath, so that it continues a conversation where it stopped. It is
// pure: a conversation state and a few facts in, file contents out; no client, no I/O. The
// layout and how agents use it are in docs/resume-bundle.md.
package bundle

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
)

// The files of every bundle, relative to the mount.
const (
	// ConversationFile is the neutral state with what the agent needs to know about its
	// resume (Manifest).
	ConversationFile = "conversation.json"
	// OpenAIFile is the history as an OpenAI chat completions messages array.
	OpenAIFile = "messages.openai.json"
	// AnthropicFile is the history as the system and messages of an Anthropic Messages request.
	AnthropicFile = "messages.anthropic.json"
	// ClaudeDir holds a Claude config directory (for adapter claude-agent-sdk): point
	// CLAUDE_CONFIG_DIR at <mount>/claude.
	ClaudeDir = "claude"
)

// ErrInput is returned (wrapped) when the input cannot make a bundle; the message says why.
var ErrInput = errors.New("bundle: invalid input")

// Input is what a bundle is built from.
type Input struct {
	// State is the conversation the agent resumes (the Checkpoint's state). It is not modified.
	State *conversation.State
	// SessionID is the conversation's session id (status.sessionID, PARLEY_SESSION_ID); the
	// Claude transcript is written under it. Empty: State.SessionID.
	SessionID string
	// Conversation and Namespace name the Conversation.
	Conversation string
	Namespace    string
	// Adapter is spec.agent.adapter; empty means generic.
	Adapter parleyv1alpha1.AgentAdapter
	// AdapterState is the adapter state the agent resumes from. Nil: the latest one in
	// State.Adapters (latest wins, as in status.adapterState).
	AdapterState conversation.AdapterState
	// Checkpoint is the name of the Checkpoint the state comes from, if any.
	Checkpoint string
	// Attempt is the resume attempt (PARLEY_RESUME_ATTEMPT): 0 for the first pod.
	Attempt int32
	// WorkingDir is the agent container's workingDir in the pod template. For
	// claude-agent-sdk the transcript is filed under the working directory the SDK runs in:
	// the workspacePath the Claude adapter reported (what the SDK itself used) when there
	// is one, else WorkingDir.
	WorkingDir string
	// ClaudeConfigDir is where the bundle's claude directory is in the pod (e.g.
	// /var/run/parley/claude), the value of CLAUDE_CONFIG_DIR; recorded in conversation.json.
	ClaudeConfigDir string
	// RealPath resolves the working directory to the path the Claude CLI will see (it files
	// sessions by the real path, symlinks resolved). Nil: the path is used as given, which is
	// all the manager can do, since the directory exists only in the pod. See
	// conversation.ClaudeExportOptions.RealPath.
	RealPath func(string) (string, error)
}

// Files are a bundle's files: path relative to the mount → content.
type Files map[string][]byte

// Size is the number of bytes of all the files' contents: what a ConfigMap's data holds.
func (f Files) Size() int {
	n := 0
	for _, c := range f {
		n += len(c)
	}
	return n
}

// Paths are the files' paths, sorted.
func (f Files) Paths() []string {
	return slices.Sorted(maps.Keys(f))
}

// Build renders the bundle for in. The same input always gives the same bytes.
func Build(in Input) (Files, error) {
	if in.State == nil {
		return nil, fmt.Errorf("%w: no state", ErrInput)
	}
	if in.SessionID == "" {
		in.SessionID = in.State.SessionID
	}
	if in.SessionID == "" {
		return nil, fmt.Errorf("%w: no session id", ErrInput)
	}
	if in.Adapter == "" {
		in.Adapter = parleyv1alpha1.DefaultAdapter
	}
	if in.AdapterState == nil && len(in.State.Adapters) > 0 {
		in.AdapterState = in.State.Adapters[len(in.State.Adapters)-1]
	}
	files := Files{}
	var claude *ClaudeResume
	switch {
	case in.Adapter != parleyv1alpha1.AdapterClaudeAgentSDK:
	case len(in.State.Messages) > 0:
		var err error
		if claude, err = addClaude(files, &in); err != nil {
			return nil, err
		}
	default:
		// The first pod: nothing to resume and no claude directory, but the agent still
		// learns where to run and under which session id to start (no transcript).
		claude = &ClaudeResume{ConfigDir: in.ClaudeConfigDir, CWD: claudeWorkingDir(&in), SessionID: in.SessionID}
	}
	if err := addRenderings(files, in.State); err != nil {
		return nil, err
	}
	manifest, err := encodeManifest(&in, claude)
	if err != nil {
		return nil, err
	}
	files[ConversationFile] = manifest
	// ConfigMap data is UTF-8 text; bytes that are not (possible only in a state imported
	// from a broken transcript and kept raw) would be altered on the way.
	for _, p := range files.Paths() {
		if !utf8.Valid(files[p]) {
			return nil, fmt.Errorf("%w: %s would hold invalid UTF-8", ErrInput, p)
		}
	}
	return files, nil
}
