package conversation

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// EventType names a reducer event (the agent-converters seed's vocabulary).
type EventType string

// Reducer events.
const (
	// EventBlockUpsert creates or replaces one block of a message, creating the message
	// when it does not exist. Without a block it creates or updates the message alone.
	EventBlockUpsert EventType = "block:upsert"
	// EventBlockDelta appends streamed text to a text or thinking block.
	EventBlockDelta EventType = "block:delta"
	// EventSubagentSpawned starts a nested thread for a tool call.
	EventSubagentSpawned EventType = "subagent:spawned"
	// EventSubagentCompleted ends a nested thread.
	EventSubagentCompleted EventType = "subagent:completed"
	// EventSessionIdle marks the end of a burst of streaming: pending blocks are final.
	EventSessionIdle EventType = "session:idle"
)

// MainThread is the ConversationID of the main conversation ("" means the same).
const MainThread = "main"

// Event is one change to a State, applied by Reduce.
type Event struct {
	Type EventType `json:"type"`
	// ConversationID is the thread: "" or MainThread, or a subagent's tool use id or agent id.
	ConversationID string `json:"conversationId,omitzero"`

	// Message (block:upsert) is the message the block belongs to: its ID always, its other
	// fields (role, model, usage, ...) when the message is new or they changed. Its Blocks
	// and Turn are ignored, and so is its Seq once the message exists; a new message's Seq
	// is assigned when zero and otherwise must follow the thread's last (see Reduce).
	Message *Message `json:"message,omitzero"`
	// Block (block:upsert) replaces the message's block with the same ID, or else the block
	// at Index, or is appended.
	Block *Block `json:"block,omitzero"`
	// Index (block:upsert) is the block's position in the message (Anthropic's content
	// block index), used when the block's ID changed while it streamed.
	Index *int `json:"index,omitzero"`

	// MessageID and BlockID (block:delta) address the block; an empty MessageID means the
	// thread's last message.
	MessageID string `json:"messageId,omitzero"`
	BlockID   string `json:"blockId,omitzero"`
	// Delta (block:delta) is the text to append.
	Delta string `json:"delta,omitzero"`

	// ToolUseID, AgentID, Description and Status describe a subagent (subagent:* events).
	ToolUseID   string         `json:"toolUseId,omitzero"`
	AgentID     string         `json:"agentId,omitzero"`
	Description string         `json:"description,omitzero"`
	Status      SubagentStatus `json:"status,omitzero"`
}

// ErrEvent wraps every error about a malformed event.
var ErrEvent = errors.New("conversation: bad event")

// DecodeEvent decodes one event from JSON and checks it carries what its type needs.
func DecodeEvent(data []byte) (Event, error) {
	if !utf8.Valid(data) { // JSON is UTF-8; raw members would not come back as read
		return Event{}, fmt.Errorf("%w: not valid UTF-8", ErrEvent)
	}
	var e Event
	if err := json.Unmarshal(data, &e, json.RejectUnknownMembers(true), lenientJSON); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrEvent, err)
	}
	if err := e.Validate(); err != nil {
		return Event{}, err
	}
	return e, nil
}

// Validate reports what an event lacks for its type.
func (e *Event) Validate() error {
	bad := func(why string) error { return fmt.Errorf("%w: %s: %s", ErrEvent, e.Type, why) }
	if !rawUTF8(e.eachRaw) {
		return bad(errRawUTF8.Error())
	}
	switch e.Type {
	case EventBlockUpsert:
		if e.Message == nil || e.Message.ID == "" {
			return bad("message.id is required")
		}
		if e.Message.Role != "" && !validRole(e.Message.Role) {
			return bad(fmt.Sprintf("unknown role %q", e.Message.Role))
		}
		if e.Block != nil && e.Block.Type == "" {
			return bad("block.type is required")
		}
		if e.Index != nil && *e.Index < 0 {
			return bad("index is negative")
		}
	case EventBlockDelta:
		if e.BlockID == "" {
			return bad("blockId is required")
		}
	case EventSubagentSpawned, EventSubagentCompleted:
		if e.ToolUseID == "" && e.AgentID == "" {
			return bad("toolUseId or agentId is required")
		}
		if e.AgentID != "" && !claudeFileID(e.AgentID) {
			return bad("agentId names the subagent's transcript file: no path separators, not . or ..")
		}
	case EventSessionIdle:
	default:
		return fmt.Errorf("%w: unknown type %q", ErrEvent, e.Type)
	}
	return nil
}

// eachRaw calls f on the raw JSON values of the event's message and block.
func (e *Event) eachRaw(f func(*jsontext.Value)) {
	if e.Message != nil {
		eachRawOfMessage(e.Message, f)
	}
	if e.Block != nil {
		eachRawOfBlock(e.Block, f)
	}
}

func validRole(r Role) bool {
	switch r {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		return true
	}
	return false
}
