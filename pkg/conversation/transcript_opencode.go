package conversation

import (
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// OpenCode session exports (`opencode export`): {info: session, messages: [{info, parts}]}.
// text parts become text blocks, reasoning parts thinking blocks, and a tool part (call and
// result together) a tool_use block plus a tool_result block in a RoleTool message that
// follows its assistant message. A task tool's child session becomes a subagent (without
// messages: the export does not hold them). Parts with no content (step-start, step-finish,
// patch, snapshot, types not invented yet) are kept verbatim in the message's Source.Raw.

type openCodeExport struct {
	Info     openCodeSession   `json:"info"`
	Messages []openCodeMessage `json:"messages"`
}

type openCodeSession struct {
	ID        string `json:"id"`
	Directory string `json:"directory"`
}

type openCodeMessage struct {
	Info  jsontext.Value   `json:"info"`
	Parts []jsontext.Value `json:"parts"`
}

type openCodeInfo struct {
	ID       string `json:"id"`
	Role     string `json:"role"`
	ParentID string `json:"parentID"`
	ModelID  string `json:"modelID"`
	Time     struct {
		Created int64 `json:"created"`
	} `json:"time"`
	Tokens *struct {
		Input     int64 `json:"input"`
		Output    int64 `json:"output"`
		Reasoning int64 `json:"reasoning"`
		Cache     struct {
			Read  int64 `json:"read"`
			Write int64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
}

type openCodePart struct {
	ID     string         `json:"id"`
	Type   string         `json:"type"`
	Text   string         `json:"text"`
	CallID string         `json:"callID"`
	Tool   string         `json:"tool"`
	State  *openCodeState `json:"state"`
}

type openCodeState struct {
	Status   string         `json:"status"`
	Input    jsontext.Value `json:"input"`
	Output   string         `json:"output"`
	Error    string         `json:"error"`
	Metadata *struct {
		SessionID string `json:"sessionId"`
	} `json:"metadata"`
}

// openCodeSource is what Message.Source.Raw holds for an OpenCode message.
type openCodeSource struct {
	Info  jsontext.Value   `json:"info"`
	Parts []jsontext.Value `json:"parts,omitzero"`
}

// ImportOpenCode reads an OpenCode session export.
func ImportOpenCode(data []byte) (State, error) {
	var exp openCodeExport
	if err := json.Unmarshal(data, &exp, lenientJSON); err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrTranscript, err)
	}
	s := NewState(exp.Info.ID)
	s.CWD = exp.Info.Directory
	for i := range exp.Messages {
		msgs, subs, err := openCodeMessages(&exp.Messages[i])
		if err != nil {
			return State{}, fmt.Errorf("%w: message %d: %w", ErrTranscript, i, err)
		}
		s.Messages = append(s.Messages, msgs...)
		s.Subagents = append(s.Subagents, subs...)
	}
	for i := range s.Messages {
		s.Messages[i].Seq = int64(i + 1)
	}
	NumberTurns(s.Messages)
	// An export repeating a message id (or one named like another's "/tool-results")
	// cannot be a state: refuse it whole rather than return one Validate rejects.
	if err := s.Validate(); err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrTranscript, err)
	}
	return s, nil
}

func openCodeMessages(om *openCodeMessage) ([]Message, []Subagent, error) {
	var info openCodeInfo
	if err := json.Unmarshal(om.Info, &info, lenientJSON); err != nil {
		return nil, nil, err
	}
	if info.ID == "" {
		return nil, nil, fmt.Errorf("message without id")
	}
	m := Message{ID: info.ID, ParentID: info.ParentID, Model: info.ModelID, Source: Source{Kind: SourceOpenCode, IDs: []string{info.ID}}}
	switch info.Role {
	case "user":
		m.Role = RoleUser
	case "assistant":
		m.Role = RoleAssistant
	default:
		return nil, nil, fmt.Errorf("unknown role %q", info.Role)
	}
	if info.Time.Created > 0 {
		m.CreatedAt = time.UnixMilli(info.Time.Created).UTC()
	}
	if t := info.Tokens; t != nil {
		m.Usage = Usage{Input: t.Input, Output: t.Output + t.Reasoning, CacheRead: t.Cache.Read, CacheWrite: t.Cache.Write}
	}
	results := Message{ID: info.ID + "/tool-results", ParentID: info.ID, Role: RoleTool, CreatedAt: m.CreatedAt, Source: Source{Kind: SourceOpenCode}}
	src := openCodeSource{Info: om.Info}
	var subs []Subagent
	for _, raw := range om.Parts {
		var p openCodePart
		if err := json.Unmarshal(raw, &p, lenientJSON); err != nil {
			return nil, nil, err
		}
		switch {
		case p.Type == "text":
			m.Blocks = append(m.Blocks, Block{Type: BlockText, ID: p.ID, Text: p.Text})
		case p.Type == "reasoning":
			m.Blocks = append(m.Blocks, Block{Type: BlockThinking, ID: p.ID, Text: p.Text})
		case p.Type == "tool" && p.State != nil && p.CallID != "":
			m.Blocks = append(m.Blocks, Block{Type: BlockToolUse, ID: p.ID, ToolUseID: p.CallID, ToolName: p.Tool, Input: p.State.Input})
			if r, ok := openCodeResult(&p); ok {
				results.Blocks = append(results.Blocks, r)
			}
			if sub, ok := openCodeSubagent(&p); ok {
				subs = append(subs, sub)
			}
		default:
			src.Parts = append(src.Parts, raw)
		}
	}
	rawSrc, err := json.Marshal(src, lenientJSON)
	if err != nil {
		return nil, nil, err
	}
	m.Source.Raw = rawSrc
	out := []Message{m}
	if len(results.Blocks) > 0 {
		out = append(out, results)
	}
	return out, subs, nil
}

func openCodeResult(p *openCodePart) (Block, bool) {
	switch p.State.Status {
	case "completed":
		return Block{Type: BlockToolResult, ID: p.ID + "/result", ToolUseID: p.CallID, Text: p.State.Output}, true
	case "error":
		return Block{Type: BlockToolResult, ID: p.ID + "/result", ToolUseID: p.CallID, Text: p.State.Error, IsError: true}, true
	}
	return Block{}, false // pending or running: no result yet
}

func openCodeSubagent(p *openCodePart) (Subagent, bool) {
	if p.Tool != "task" {
		return Subagent{}, false
	}
	sub := Subagent{ToolUseID: p.CallID, Status: SubagentRunning}
	var in struct {
		Description string `json:"description"`
	}
	_ = json.Unmarshal(p.State.Input, &in, lenientJSON)
	sub.Description = in.Description
	if p.State.Metadata != nil {
		sub.AgentID = p.State.Metadata.SessionID
	}
	switch p.State.Status {
	case "completed":
		sub.Status = SubagentCompleted
	case "error":
		sub.Status = SubagentFailed
	}
	return sub, true
}
