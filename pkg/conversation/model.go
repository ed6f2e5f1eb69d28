// Package conversation is Parley's provider-neutral conversation model: messages made of typed
// blocks, the event reducer, turns, the versioned snapshot format, adapter state, converters to
// and from the OpenAI and Anthropic wire formats, and transcript importers and exporters.
// It is pure Go with no Kubernetes imports.
//
// Invariants of the model (the rest of the package, and compaction, rely on them):
//
//   - A conversation is State.System (the pinned system prompt, optional) followed by
//     State.Messages in order. Messages never hold the system prompt; a RoleSystem message in
//     Messages is a mid-conversation notice (for example a compaction summary).
//   - A tool call is a BlockToolUse block inside a RoleAssistant message. Its ToolUseID is unique
//     in the conversation.
//   - A tool result is a BlockToolResult block, and it lives ONLY in a RoleTool message (the
//     canonical representation). One RoleTool message may answer several calls of the closest
//     preceding assistant message, one BlockToolResult per call. When a provider put user
//     text or images in the same turn as the results (Anthropic allows it), those blocks follow
//     the results in the same RoleTool message. Converters map RoleTool to one OpenAI
//     `role:"tool"` message per result and to the Anthropic/Claude `role:"user"` message.
//   - Unknown provider data survives: a block of an unknown type keeps its whole JSON in
//     Block.Raw, unknown fields of known blocks sit in Block.Extra, and unknown fields of the
//     model itself (written by a newer minor schema) are kept in the Extra fields.
//   - Message.Seq is strictly increasing in State.Messages; Message.ID is unique.
package conversation

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// SchemaVersion is the version of the model and of the snapshot format, "major.minor".
// A reader accepts any minor version of its major and refuses other majors.
//
// 1.1 added State.Source (a transcript's fields that belong to no message, e.g. an OpenCode
// export's session info) and RawRecord.AfterLine. A 1.0 reader keeps State.Source in
// State.Extra and writes it back (AfterLine, an ordering detail, it drops); 1.0 snapshots
// decode unchanged.
const SchemaVersion = "1.1"

// Role is who produced a message.
type Role string

// The roles of the model.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// BlockType is the kind of a content block.
type BlockType string

// The block kinds of the model. A block of any other type is kept whole in Block.Raw.
const (
	BlockText             BlockType = "text"
	BlockThinking         BlockType = "thinking"
	BlockRedactedThinking BlockType = "redacted_thinking"
	BlockToolUse          BlockType = "tool_use"
	BlockToolResult       BlockType = "tool_result"
	BlockImage            BlockType = "image"
	BlockDocument         BlockType = "document"
)

// BlockStatus tells whether a streamed block is still being written.
type BlockStatus string

// Block statuses. The zero value means complete.
const (
	BlockComplete BlockStatus = ""
	BlockPending  BlockStatus = "pending"
	BlockError    BlockStatus = "error"
)

// Block is one piece of a message's content. Which fields are used depends on Type:
//
//   - text: Text.
//   - thinking: Text (the thinking) and Signature, both verbatim (Anthropic requires it).
//   - redacted_thinking: Data, verbatim.
//   - tool_use: ToolUseID, ToolName, Input (the arguments as a JSON value) and Arguments (the
//     exact string the provider sent, e.g. OpenAI's function.arguments; empty when the provider
//     sent a JSON object, whose exact bytes are then Input).
//   - tool_result: ToolUseID, IsError, and the output either as Text (the provider sent a
//     string) or as Content (the provider sent a list of blocks).
//   - image, document: Media, a reference to the bytes rather than the bytes where possible.
//   - anything else: Raw holds the block's JSON untouched.
type Block struct {
	Type BlockType `json:"type"`
	// ID identifies the block for the reducer's upsert and delta events, and keeps the
	// transcript line id (Claude Code writes one block per line).
	ID        string         `json:"id,omitzero"`
	Status    BlockStatus    `json:"status,omitzero"`
	Text      string         `json:"text,omitzero"`
	Signature string         `json:"signature,omitzero"`
	Data      string         `json:"data,omitzero"`
	ToolUseID string         `json:"toolUseId,omitzero"`
	ToolName  string         `json:"toolName,omitzero"`
	Input     jsontext.Value `json:"input,omitzero"`
	Arguments string         `json:"arguments,omitzero"`
	IsError   bool           `json:"isError,omitzero"`
	Content   []Block        `json:"content,omitzero"`
	Media     *MediaRef      `json:"media,omitzero"`
	// Raw is the provider's JSON of a block whose type the model does not know.
	Raw jsontext.Value `json:"raw,omitzero"`
	// Extra holds the provider's fields of a known block that the model has no field for
	// (e.g. cache_control, citations), as a JSON object, so they can be written back.
	Extra jsontext.Value `json:"extra,omitzero"`
}

// MediaRef points at an image or a document.
type MediaRef struct {
	// SourceType is the provider's source kind: "url", "file", "base64", "text".
	SourceType string `json:"sourceType,omitzero"`
	MediaType  string `json:"mediaType,omitzero"`
	URL        string `json:"url,omitzero"`
	FileID     string `json:"fileId,omitzero"`
	// Data is inline content (base64 or text) when the provider sent no reference.
	Data  string `json:"data,omitzero"`
	Title string `json:"title,omitzero"`
}

// Usage is the token usage a provider reported for a message.
type Usage struct {
	Input      int64 `json:"input,omitzero"`
	Output     int64 `json:"output,omitzero"`
	CacheRead  int64 `json:"cacheRead,omitzero"`
	CacheWrite int64 `json:"cacheWrite,omitzero"`
}

// IsZero reports whether no usage was reported.
func (u Usage) IsZero() bool { return u == Usage{} }

// Total is every token the message accounted for, input and output.
func (u Usage) Total() int64 { return u.Input + u.Output + u.CacheRead + u.CacheWrite }

// Flags are boolean properties of a message. Bit positions are part of the snapshot format:
// never reuse or move one.
type Flags uint32

// Message flags.
const (
	// FlagSidechain marks a message of a subagent's thread (Claude Code isSidechain).
	FlagSidechain Flags = 1 << iota
	// FlagCompactSummary marks a summary standing in for folded history (Claude Code
	// isCompactSummary, or Parley's own Summarize compaction).
	FlagCompactSummary
	// FlagMeta marks a message injected by the agent runtime, not typed by a person
	// (Claude Code isMeta).
	FlagMeta
	// FlagTruncationNotice marks the notice that compaction inserts where it dropped messages.
	FlagTruncationNotice
	// FlagToolResultsCleared marks a message whose tool outputs compaction replaced.
	FlagToolResultsCleared
	// FlagSynthetic marks a message the agent runtime made up (Claude SDK isSynthetic).
	FlagSynthetic
)

// Has reports whether every flag of f2 is set.
func (f Flags) Has(f2 Flags) bool { return f&f2 == f2 }

// Source records where a message came from, so it can be written back in its own format.
type Source struct {
	// Kind is the format: one of the SourceXxx constants.
	Kind string `json:"kind,omitzero"`
	// IDs are the provider's ids of the message (e.g. the Anthropic message id).
	IDs []string `json:"ids,omitzero"`
	// Raw is provider data the model has no field for, in the format's own JSON (for Claude
	// Code, the transcript lines without their content: see transcript_claude.go).
	Raw jsontext.Value `json:"raw,omitzero"`
}

// Source kinds.
const (
	SourceClaudeCode = "claude-code"
	SourceOpenCode   = "opencode"
	SourceOpenAI     = "openai"
	SourceAnthropic  = "anthropic"
	SourceEvents     = "events"
)

// Message is one message of a conversation.
type Message struct {
	ID string `json:"id"`
	// Seq is the position in the history, strictly increasing, assigned by whoever appends.
	Seq int64 `json:"seq,omitzero"`
	// ParentID is the ID of the message this one answers or follows, when the source said so.
	ParentID string  `json:"parentId,omitzero"`
	Role     Role    `json:"role"`
	Blocks   []Block `json:"blocks,omitzero"`
	// Name is the author's name (OpenAI name) when there is one.
	Name  string `json:"name,omitzero"`
	Model string `json:"model,omitzero"`
	Usage Usage  `json:"usage,omitzero"`
	// Turn is the number of the turn this message belongs to (see Turns).
	Turn      int       `json:"turn,omitzero"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
	Flags     Flags     `json:"flags,omitzero"`
	Source    Source    `json:"source,omitzero"`
	// Extra keeps fields written by a newer minor version of the schema.
	Extra jsontext.Value `json:",embed"`
}

// ToolUseIDs returns the ids of the tool calls the message makes, in order.
func (m *Message) ToolUseIDs() []string {
	return blockIDs(m.Blocks, BlockToolUse)
}

// ToolResultIDs returns the ids of the tool calls the message answers, in order.
func (m *Message) ToolResultIDs() []string {
	return blockIDs(m.Blocks, BlockToolResult)
}

// HasToolUse reports whether the message makes at least one tool call.
func (m *Message) HasToolUse() bool { return hasBlock(m.Blocks, BlockToolUse) }

// HasToolResult reports whether the message answers at least one tool call.
func (m *Message) HasToolResult() bool { return hasBlock(m.Blocks, BlockToolResult) }

// Text joins the message's text blocks with newlines (thinking and tool blocks excluded).
func (m *Message) Text() string {
	n := 0
	for i := range m.Blocks {
		if m.Blocks[i].Type == BlockText {
			n += len(m.Blocks[i].Text) + 1
		}
	}
	buf := make([]byte, 0, n)
	for i := range m.Blocks {
		if m.Blocks[i].Type == BlockText {
			if len(buf) > 0 {
				buf = append(buf, '\n')
			}
			buf = append(buf, m.Blocks[i].Text...)
		}
	}
	return string(buf)
}

// isModelBlockType reports whether t is a block kind the model defines (not one kept raw).
func isModelBlockType(t BlockType) bool {
	switch t {
	case BlockText, BlockThinking, BlockRedactedThinking, BlockToolUse, BlockToolResult, BlockImage, BlockDocument:
		return true
	}
	return false
}

func blockIDs(blocks []Block, kind BlockType) []string {
	var ids []string
	for i := range blocks {
		if blocks[i].Type == kind {
			ids = append(ids, blocks[i].ToolUseID)
		}
	}
	return ids
}

func hasBlock(blocks []Block, kind BlockType) bool {
	for i := range blocks {
		if blocks[i].Type == kind {
			return true
		}
	}
	return false
}

// SubagentStatus is the lifecycle of a subagent thread.
type SubagentStatus string

// Subagent statuses.
const (
	SubagentRunning   SubagentStatus = "running"
	SubagentCompleted SubagentStatus = "completed"
	SubagentFailed    SubagentStatus = "failed"
)

// Subagent is a nested thread started by a tool call of its parent (Claude's Task tool).
// It is keyed by ToolUseID, the id of that call, and can also be found by AgentID, which the
// provider assigns later.
type Subagent struct {
	ToolUseID   string         `json:"toolUseId,omitzero"`
	AgentID     string         `json:"agentId,omitzero"`
	Status      SubagentStatus `json:"status,omitzero"`
	Description string         `json:"description,omitzero"`
	Messages    []Message      `json:"messages,omitzero"`
	// Subagents are the threads this subagent started in turn.
	Subagents []Subagent     `json:"subagents,omitzero"`
	Extra     jsontext.Value `json:",embed"`
}

// RawRecord is a transcript record the model does not understand (e.g. a Claude Code
// "queue-operation" line), kept to be written back in place.
type RawRecord struct {
	// AfterID is the ID of the message the record followed; empty means before the first.
	AfterID string `json:"afterId,omitzero"`
	// AfterLine is the uuid of the line of that message the record followed, when it is not
	// the message's last line (its lines had others between them); empty means after them all.
	AfterLine string `json:"afterLine,omitzero"`
	// Thread is the subagent (by AgentID) whose transcript held the record; empty for the main one.
	Thread string         `json:"thread,omitzero"`
	Raw    jsontext.Value `json:"raw"`
}

// State is a whole conversation: what a checkpoint holds and what a resumed agent needs.
type State struct {
	SchemaVersion string `json:"schemaVersion"`
	SessionID     string `json:"sessionId,omitzero"`
	// CWD is the agent's working directory when known; the Claude SDK files sessions by it.
	CWD       string     `json:"cwd,omitzero"`
	System    *Message   `json:"system,omitzero"`
	Messages  []Message  `json:"messages,omitzero"`
	Subagents []Subagent `json:"subagents,omitzero"`
	// Adapters is the agent adapters' reported state, oldest first (the latest wins).
	Adapters AdapterStates `json:"adapters,omitzero"`
	// Records are transcript records kept only to be written back.
	Records []RawRecord `json:"records,omitzero"`
	// Source is the transcript the state was imported from: its format and, in Raw, the
	// fields of the transcript that belong to no message (an OpenCode export's session
	// info, members Parley does not know), written back by that format's exporter.
	Source Source         `json:"source,omitzero"`
	Extra  jsontext.Value `json:",embed"`
}

// NewState returns an empty state of the current schema version.
func NewState(sessionID string) State {
	return State{SchemaVersion: SchemaVersion, SessionID: sessionID}
}

// Turn is one assistant message with the tool results that answer it (the seed's
// ConversationTurn). Messages are copies; Index is the assistant message's index in
// State.Messages.
type Turn struct {
	Number      int       `json:"number"`
	Index       int       `json:"index"`
	Assistant   Message   `json:"assistant"`
	ToolResults []Message `json:"toolResults,omitzero"`
}

// Complete reports whether every tool call of the turn has a result.
func (t *Turn) Complete() bool {
	answered := map[string]bool{}
	for i := range t.ToolResults {
		for _, id := range t.ToolResults[i].ToolResultIDs() {
			answered[id] = true
		}
	}
	for _, id := range t.Assistant.ToolUseIDs() {
		if !answered[id] {
			return false
		}
	}
	return true
}

// flattenSubagents lists the subagent threads and, after each, the threads nested in it.
func flattenSubagents(subs []Subagent) []*Subagent {
	out := make([]*Subagent, 0, len(subs))
	for i := range subs {
		out = append(out, &subs[i])
		out = append(out, flattenSubagents(subs[i].Subagents)...)
	}
	return out
}
