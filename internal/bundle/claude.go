package bundle

import (
	"fmt"
	"path"
	"regexp"

	"github.com/google/uuid"

	"github.com/parley-dev/parley/pkg/conversation"
)

// agentIDPattern is what a subagent id may be to name its transcript file (the CLI's are hex).
var agentIDPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// addClaude writes the Claude config directory: the session's transcript (and its subagents')
// where the Claude CLI looks for it when it runs in the working directory.
func addClaude(files Files, in *Input) (*ClaudeResume, error) {
	if u, err := uuid.Parse(in.SessionID); err != nil || u.String() != in.SessionID {
		return nil, fmt.Errorf("%w: the Claude CLI resumes a session by UUID, and %q is none", ErrInput, in.SessionID)
	}
	cwd := claudeWorkingDir(in)
	if cwd == "" {
		return nil, fmt.Errorf("%w: the Claude CLI files sessions by working directory, and none is known: set workingDir on the agent container", ErrInput)
	}
	if !path.IsAbs(cwd) {
		return nil, fmt.Errorf("%w: working directory %q is not absolute", ErrInput, cwd)
	}
	if in.RealPath != nil {
		resolved, err := in.RealPath(cwd)
		if err != nil {
			return nil, fmt.Errorf("%w: resolve the working directory: %w", ErrInput, err)
		}
		cwd = resolved
	}
	exported, err := conversation.ExportClaude(in.State, conversation.ClaudeExportOptions{SessionID: in.SessionID, CWD: cwd})
	if err != nil {
		return nil, fmt.Errorf("%w: export the Claude transcript: %w", ErrInput, err)
	}
	for _, sub := range flatten(in.State.Subagents) {
		if sub.AgentID != "" && !agentIDPattern.MatchString(sub.AgentID) {
			return nil, fmt.Errorf("%w: subagent id %q cannot name a file", ErrInput, sub.AgentID)
		}
	}
	for _, r := range in.State.Records {
		if r.Thread != "" && !agentIDPattern.MatchString(r.Thread) {
			return nil, fmt.Errorf("%w: subagent id %q cannot name a file", ErrInput, r.Thread)
		}
	}
	for _, f := range exported {
		files[path.Join(ClaudeDir, f.Path)] = f.Content
	}
	return &ClaudeResume{
		ConfigDir: in.ClaudeConfigDir, CWD: cwd, SessionID: in.SessionID,
		Transcript: path.Join(ClaudeDir, exported[0].Path),
	}, nil
}

// claudeWorkingDir is the directory the SDK will run in: the absolute workspacePath the Claude
// adapter last reported (the SDK's own cwd, which may differ from the container's, e.g. its
// cwd option), else the container's workingDir.
func claudeWorkingDir(in *Input) string {
	if p, ok := reportedWorkspace(in.AdapterState); ok {
		return p
	}
	for i := len(in.State.Adapters) - 1; i >= 0; i-- {
		if p, ok := reportedWorkspace(in.State.Adapters[i]); ok {
			return p
		}
	}
	return in.WorkingDir
}

// reportedWorkspace is the absolute workspacePath a Claude adapter state reports. The agent
// reports it, so a relative one (which no CLI runs in) is passed over rather than refused:
// refusing would let one report keep every later agent pod of the conversation from starting.
func reportedWorkspace(st conversation.AdapterState) (string, bool) {
	c, ok := st.(*conversation.ClaudeAgentSDKState)
	if !ok || !path.IsAbs(c.WorkspacePath) {
		return "", false
	}
	return c.WorkspacePath, true
}

func flatten(subs []conversation.Subagent) []*conversation.Subagent {
	out := make([]*conversation.Subagent, 0, len(subs))
	for i := range subs {
		out = append(out, &subs[i])
		out = append(out, flatten(subs[i].Subagents)...)
	}
	return out
}
