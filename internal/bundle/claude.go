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
	exported, err := conversation.ExportClaude(fileableThreads(in.State), conversation.ClaudeExportOptions{SessionID: in.SessionID, CWD: cwd})
	if err != nil {
		return nil, fmt.Errorf("%w: export the Claude transcript: %w", ErrInput, err)
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

// fileableThreads is the state without the subagents (and their raw records) whose id cannot
// name a transcript file. The agent writes those ids (a transcript's subpath), so one it cannot
// file leaves its subagent out of the Claude directory (conversation.json keeps it) rather than
// keeping every later agent pod of the conversation from starting.
func fileableThreads(s *conversation.State) *conversation.State {
	fileable := func(id string) bool { return id == "" || agentIDPattern.MatchString(id) }
	out := *s
	out.Subagents = keepSubagents(s.Subagents, fileable)
	out.Records = nil
	for _, r := range s.Records {
		if fileable(r.Thread) {
			out.Records = append(out.Records, r)
		}
	}
	return &out
}

func keepSubagents(subs []conversation.Subagent, fileable func(string) bool) []conversation.Subagent {
	var out []conversation.Subagent
	for _, sub := range subs {
		if fileable(sub.AgentID) {
			sub.Subagents = keepSubagents(sub.Subagents, fileable)
			out = append(out, sub)
		}
	}
	return out
}
