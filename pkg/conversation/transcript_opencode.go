package conversation

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// OpenCode session exports (`opencode export`): {info: session, messages: [{info, parts}]}.
// text parts become text blocks, reasoning parts thinking blocks, and a tool part (call and
// result together) a tool_use block plus a tool_result block in a RoleTool message that
// follows its assistant message. A task tool's child session becomes a subagent (without
// messages: the export does not hold them).
//
// Nothing is dropped. The export object without its messages is kept in State.Source.Raw
// (the session's id, title, time, version and any member Parley does not know). Each
// message keeps in Source.Raw its entry without its parts and every part in order (see
// openCodeSource): parts with no block (step-start, step-finish, patch, types not invented
// yet) whole, and the parts that became blocks without the members their block holds (text,
// tool input, output and error), so everything else — a part's time, a tool's title and
// metadata (a task's child session and its tool calls) — is written back by ExportOpenCode.

type openCodeSession struct {
	ID        string `json:"id"`
	Directory string `json:"directory"`
}

type openCodeMessage struct {
	Info  jsontext.Value   `json:"info"`
	Parts []jsontext.Value `json:"parts"`
}

type openCodeInfo struct {
	ID       string         `json:"id"`
	Role     string         `json:"role"`
	ParentID string         `json:"parentID"`
	ModelID  string         `json:"modelID"`
	Time     openCodeTime   `json:"time"`
	Tokens   *openCodeUsage `json:"tokens"`
}

type openCodeTime struct {
	Created int64 `json:"created"`
}

type openCodeUsage struct {
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
	Cache     struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

func (u *openCodeUsage) toUsage() Usage {
	if u == nil {
		return Usage{}
	}
	return Usage{Input: u.Input, Output: u.Output + u.Reasoning, CacheRead: u.Cache.Read, CacheWrite: u.Cache.Write}
}

// createdAt is the message time the importer reads from time.created (milliseconds).
func (i *openCodeInfo) createdAt() time.Time {
	if i.Time.Created > 0 {
		return time.UnixMilli(i.Time.Created).UTC()
	}
	return time.Time{}
}

// role is the model role of an OpenCode message role; ok is false for a role it has none for.
func openCodeRole(r string) (Role, bool) {
	switch r {
	case "user":
		return RoleUser, true
	case "assistant":
		return RoleAssistant, true
	}
	return "", false
}

type openCodePart struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	Text      string         `json:"text"`
	CallID    string         `json:"callID"`
	Tool      string         `json:"tool"`
	MessageID string         `json:"messageID"`
	SessionID string         `json:"sessionID"`
	State     *openCodeState `json:"state"`
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

// isBlockPart reports whether the importer makes a block of a part.
func (p *openCodePart) isBlockPart() bool {
	switch p.Type {
	case "text", "reasoning":
		return true
	case "tool":
		return p.State != nil && p.CallID != ""
	}
	return false
}

// openCodeSource is what Message.Source.Raw holds for an OpenCode message.
type openCodeSource struct {
	// Entry is the message entry as exported ({info, parts, ...}) with its parts member
	// emptied; the parts are in Layout.
	Entry jsontext.Value `json:"entry,omitzero"`
	// Layout is every part of the message, in order.
	Layout []openCodePartRecord `json:"layout,omitzero"`
	// Info and Parts are what schema 1.0 kept: the info object, and only the parts that
	// became no block. ExportOpenCode still reads them.
	Info  jsontext.Value   `json:"info,omitzero"`
	Parts []jsontext.Value `json:"parts,omitzero"`
}

// openCodePartRecord is one part of a message as kept in openCodeSource.
type openCodePartRecord struct {
	// Part is the part as exported; for a part that became a block, without the members the
	// block holds (see Held).
	Part jsontext.Value `json:"part"`
	// Block says the part became one of the message's blocks (the block with the part's id):
	// a text, a thinking or a tool_use block (whose result is in the RoleTool message after).
	Block bool `json:"block,omitzero"`
	// Held names the members cut out of Part because the blocks hold them: "text",
	// "state.input", "state.output", "state.error". They are written back from the blocks.
	Held []string `json:"held,omitzero"`
}

// ImportOpenCode reads an OpenCode session export.
// Bytes that are not UTF-8 are read as U+FFFD, in raw values as in strings.
func ImportOpenCode(data []byte) (State, error) {
	top := jsontext.Value(validUTF8(bytes.Trim(data, " \t\r\n"))) // JSON's whitespace, no other
	if top.Kind() != '{' {
		return State{}, fmt.Errorf("%w: an OpenCode export is a JSON object", ErrTranscript)
	}
	// A member name written twice is refused: JSON.stringify never writes one, and which
	// copy counts differs from reader to reader, so no export could be said to keep it.
	if _, err := jsontext.NewDecoder(bytes.NewReader(top), jsontext.AllowInvalidUTF8(true)).ReadValue(); err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrTranscript, err)
	}
	var exp struct {
		Info     openCodeSession   `json:"info"`
		Messages []openCodeMessage `json:"messages"`
	}
	if err := json.Unmarshal(top, &exp, lenientJSON); err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrTranscript, err)
	}
	rest, err := emptyMember(top, "messages", "[]")
	if err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrTranscript, err)
	}
	s := NewState(exp.Info.ID)
	s.CWD = exp.Info.Directory
	s.Source = Source{Kind: SourceOpenCode, Raw: rest}
	entries, err := rawMessages(top)
	if err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrTranscript, err)
	}
	for i := range exp.Messages {
		msgs, subs, err := openCodeMessages(&exp.Messages[i], entries[i])
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

// rawMessages returns the entries of the export's messages member as written.
func rawMessages(top jsontext.Value) ([]jsontext.Value, error) {
	v, ok := memberOf(top, "messages")
	if !ok || v.Kind() == 'n' {
		return nil, nil
	}
	var entries []jsontext.Value
	err := json.Unmarshal(v, &entries, lenientJSON)
	return entries, err
}

// emptyMember returns obj with the named member's value replaced by empty (a placeholder
// the exporter fills), when the member holds an array; a null or absent member is left as
// it is so that it is written back as it was.
func emptyMember(obj jsontext.Value, name, empty string) (jsontext.Value, error) {
	return rewriteObject(obj, func(n string, v jsontext.Value) (jsontext.Value, error) {
		if n == name && v.Kind() == '[' {
			return jsontext.Value(empty), nil
		}
		return v, nil
	})
}

func openCodeMessages(om *openCodeMessage, entry jsontext.Value) ([]Message, []Subagent, error) {
	var info openCodeInfo
	if err := json.Unmarshal(om.Info, &info, lenientJSON); err != nil {
		return nil, nil, err
	}
	if info.ID == "" {
		return nil, nil, fmt.Errorf("message without id")
	}
	role, ok := openCodeRole(info.Role)
	if !ok {
		return nil, nil, fmt.Errorf("unknown role %q", info.Role)
	}
	m := Message{
		ID: info.ID, ParentID: info.ParentID, Role: role, Model: info.ModelID, CreatedAt: info.createdAt(),
		Usage: info.Tokens.toUsage(), Source: Source{Kind: SourceOpenCode, IDs: []string{info.ID}},
	}
	results := Message{ID: info.ID + "/tool-results", ParentID: info.ID, Role: RoleTool, CreatedAt: m.CreatedAt, Source: Source{Kind: SourceOpenCode}}
	shell, err := emptyMember(entry, "parts", "[]")
	if err != nil {
		return nil, nil, err
	}
	src := openCodeSource{Entry: shell, Layout: make([]openCodePartRecord, 0, len(om.Parts))}
	var subs []Subagent
	toolParts := map[string]bool{}
	for _, raw := range om.Parts {
		var p openCodePart
		if err := json.Unmarshal(raw, &p, lenientJSON); err != nil {
			return nil, nil, err
		}
		if !p.isBlockPart() {
			src.Layout = append(src.Layout, openCodePartRecord{Part: raw})
			continue
		}
		if p.Type == "tool" {
			// OpenCode stores a part by its id, so an export never repeats one; a result
			// goes back to its call by it.
			if toolParts[p.ID] {
				return nil, nil, fmt.Errorf("tool part id %q repeated", p.ID)
			}
			toolParts[p.ID] = true
		}
		rec, err := heldPart(raw, &p)
		if err != nil {
			return nil, nil, err
		}
		src.Layout = append(src.Layout, rec)
		switch p.Type {
		case "text":
			m.Blocks = append(m.Blocks, Block{Type: BlockText, ID: p.ID, Text: p.Text})
		case "reasoning":
			m.Blocks = append(m.Blocks, Block{Type: BlockThinking, ID: p.ID, Text: p.Text})
		default:
			m.Blocks = append(m.Blocks, Block{Type: BlockToolUse, ID: p.ID, ToolUseID: p.CallID, ToolName: p.Tool, Input: compactJSON(p.State.Input)})
			if r, ok := openCodeResult(&p); ok {
				results.Blocks = append(results.Blocks, r)
			}
			if sub, ok := openCodeSubagent(&p); ok {
				subs = append(subs, sub)
			}
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

// heldPart cuts out of a part that became a block the members the blocks hold: its text,
// and a tool's input, output and error (the output is often a whole file). What is cut is
// written back from the blocks, so a checkpoint holds it once.
func heldPart(raw jsontext.Value, p *openCodePart) (openCodePartRecord, error) {
	rec := openCodePartRecord{Block: true}
	var err error
	if p.Type != "tool" {
		rec.Part, err = rewriteObject(raw, func(name string, v jsontext.Value) (jsontext.Value, error) {
			if name == "text" && v.Kind() == '"' {
				rec.Held = appendOnce(rec.Held, "text")
				return nil, nil
			}
			return v, nil
		})
		return rec, err
	}
	rec.Part, err = rewriteObject(raw, func(name string, v jsontext.Value) (jsontext.Value, error) {
		if name != "state" || v.Kind() != '{' {
			return v, nil
		}
		return rewriteObject(v, func(name string, v jsontext.Value) (jsontext.Value, error) {
			// The output of a completed call and the error of a failed one are the result
			// block's text; in any other status they are not in the model and stay.
			switch {
			case name == "input",
				name == "output" && v.Kind() == '"' && p.State.Status == "completed",
				name == "error" && v.Kind() == '"' && p.State.Status == "error":
				rec.Held = appendOnce(rec.Held, "state."+name)
				return nil, nil
			}
			return v, nil
		})
	})
	slices.Sort(rec.Held) // one order, whatever the member order of the part
	return rec, err
}

// compactJSON is a JSON value without the indentation of a pretty-printed export (what a
// provider is sent and tokens are counted on).
func compactJSON(v jsontext.Value) jsontext.Value {
	if len(v) == 0 {
		return v
	}
	c := v.Clone()
	if c.Compact(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)) != nil {
		return v
	}
	return c
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
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
