package bundle

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/pkg/conversation"
)

// Format names the bundle format in conversation.json.
const Format = "parley.dev/resume-bundle"

// Version is the bundle format's version; a reader refuses a version it does not know.
const Version = 1

// Manifest is conversation.json: who the agent is, where it resumes from, and the neutral
// state (system prompt, messages with their turn numbers, subagents, adapter states) last.
type Manifest struct {
	Format       string `json:"format"`
	Version      int    `json:"version"`
	Conversation string `json:"conversation"`
	Namespace    string `json:"namespace"`
	SessionID    string `json:"sessionId"`
	Adapter      string `json:"adapter"`
	Checkpoint   string `json:"checkpoint,omitzero"`
	// Attempt is the resume attempt; Resume is Attempt > 0 (the pod replaces a crashed one).
	Attempt int32 `json:"attempt"`
	Resume  bool  `json:"resume"`
	// Messages and Turns count the main thread's messages and turns.
	Messages int `json:"messages"`
	Turns    int `json:"turns"`
	// AdapterState is the adapter state to resume from: {"type": ..., "state": {...}}.
	AdapterState *AdapterEnvelope `json:"adapterState,omitzero"`
	// Claude says how to resume with the Claude CLI or Agent SDK (claude-agent-sdk only).
	Claude *ClaudeResume       `json:"claude,omitzero"`
	State  *conversation.State `json:"state"`
}

// AdapterEnvelope is an adapter state with its type, as in the state's adapters list.
type AdapterEnvelope struct {
	Type  string         `json:"type"`
	State jsontext.Value `json:"state"`
}

// ClaudeResume tells a Claude agent how to resume its session.
type ClaudeResume struct {
	// ConfigDir is the bundle's claude directory in the pod (CLAUDE_CONFIG_DIR).
	ConfigDir string `json:"configDir,omitzero"`
	// CWD is the working directory the transcript is filed under: run the CLI or SDK there.
	// Empty only on a first pod whose container names no workingDir.
	CWD string `json:"cwd,omitzero"`
	// SessionID is what to resume: claude --resume <id>, or the SDK's resume option (on a
	// first pod, what to start: claude --session-id <id>).
	SessionID string `json:"sessionId"`
	// Transcript is the main transcript, relative to the mount; empty (absent) when there is
	// nothing to resume yet, which is how an agent tells --resume from --session-id.
	Transcript string `json:"transcript,omitzero"`
}

func encodeManifest(in *Input, claude *ClaudeResume) ([]byte, error) {
	state := *in.State // shallow: only the session id differs
	state.SessionID = in.SessionID
	m := Manifest{
		Format: Format, Version: Version,
		Conversation: in.Conversation, Namespace: in.Namespace, SessionID: in.SessionID,
		Adapter: string(in.Adapter), Checkpoint: in.Checkpoint,
		Attempt: in.Attempt, Resume: in.Attempt > 0,
		Messages: len(state.Messages), Turns: turnCount(state.Messages),
		Claude: claude, State: &state,
	}
	if in.AdapterState != nil {
		raw, err := json.Marshal(in.AdapterState)
		if err != nil {
			return nil, fmt.Errorf("bundle: encode adapter state: %w", err)
		}
		m.AdapterState = &AdapterEnvelope{Type: in.AdapterState.Type(), State: raw}
	}
	return encodeJSON(ConversationFile, &m)
}

// turnCount is the highest turn number of the messages (NumberTurns numbers them from 1).
func turnCount(messages []conversation.Message) int {
	n := 0
	for i := range messages {
		n = max(n, messages[i].Turn)
	}
	return n
}

// encodeJSON writes v compactly with a final newline.
func encodeJSON(name string, v any) ([]byte, error) {
	out, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return nil, fmt.Errorf("bundle: encode %s: %w", name, err)
	}
	return append(out, '\n'), nil
}
