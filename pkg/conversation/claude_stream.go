package conversation

import (
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ClaudeStream turns the messages the Claude Agent SDK yields (one JSON object each, with
// includePartialMessages for stream_event) into reducer events, so an agent can forward its
// SDK output to Parley as it streams. It keeps the little state streaming needs; use one per
// session.
type ClaudeStream struct {
	// streamed is the API message id being streamed per thread.
	streamed map[string]string
	// finished counts, per API message id, the blocks already delivered whole.
	finished map[string]int
}

// NewClaudeStream returns a converter for one session.
func NewClaudeStream() *ClaudeStream {
	return &ClaudeStream{streamed: map[string]string{}, finished: map[string]int{}}
}

type sdkMessage struct {
	Type            string         `json:"type"`
	UUID            string         `json:"uuid"`
	ParentToolUseID string         `json:"parent_tool_use_id"`
	Message         jsontext.Value `json:"message"`
	Event           *sdkEvent      `json:"event"`
	ToolUseResult   jsontext.Value `json:"tool_use_result"`
}

type sdkEvent struct {
	Type         string         `json:"type"`
	Index        int            `json:"index"`
	Message      *claudeMessage `json:"message"`
	ContentBlock jsontext.Value `json:"content_block"`
	Delta        *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"delta"`
}

// Events converts one SDK message. Message types it does not model (system, hooks, ...)
// give no events.
func (c *ClaudeStream) Events(line []byte) ([]Event, error) {
	var m sdkMessage
	// Bytes that are not UTF-8 become U+FFFD in raw blocks as in strings (Validate refuses them raw).
	if err := json.Unmarshal(validUTF8(line), &m, lenientJSON); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEvent, err)
	}
	thread := MainThread
	if m.ParentToolUseID != "" {
		thread = m.ParentToolUseID
	}
	switch m.Type {
	case "stream_event":
		if m.Event == nil {
			return nil, nil
		}
		return c.streamEvent(thread, m.Event)
	case "assistant", "user":
		return c.message(thread, &m)
	case "result":
		return []Event{{Type: EventSessionIdle}}, nil
	}
	return nil, nil
}

func (c *ClaudeStream) streamEvent(thread string, ev *sdkEvent) ([]Event, error) {
	switch ev.Type {
	case "message_start":
		if ev.Message == nil || ev.Message.ID == "" {
			return nil, nil
		}
		c.streamed[thread] = ev.Message.ID
		return []Event{{Type: EventBlockUpsert, ConversationID: thread, Message: &Message{
			ID: ev.Message.ID, Role: RoleAssistant, Model: ev.Message.Model,
			Source: Source{Kind: SourceClaudeCode, IDs: []string{ev.Message.ID}},
		}}}, nil
	case "content_block_start":
		msgID := c.streamed[thread]
		if msgID == "" {
			return nil, nil
		}
		b, err := blockFromAnthropic(ev.ContentBlock)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEvent, err)
		}
		if b.Type == BlockToolResult { // streamed messages are the assistant's
			return nil, fmt.Errorf("%w: tool_result in an assistant message", ErrEvent)
		}
		b.ID, b.Status = streamBlockID(msgID, ev.Index), BlockPending
		index := ev.Index
		return []Event{{Type: EventBlockUpsert, ConversationID: thread, Message: &Message{ID: msgID}, Block: &b, Index: &index}}, nil
	case "content_block_delta":
		msgID := c.streamed[thread]
		if msgID == "" || ev.Delta == nil {
			return nil, nil
		}
		text := ev.Delta.Text + ev.Delta.Thinking
		return []Event{{Type: EventBlockDelta, ConversationID: thread, MessageID: msgID, BlockID: streamBlockID(msgID, ev.Index), Delta: text}}, nil
	}
	return nil, nil
}

func streamBlockID(msgID string, index int) string {
	return msgID + "#stream" + strconv.Itoa(index)
}

func (c *ClaudeStream) message(thread string, m *sdkMessage) ([]Event, error) {
	var cm claudeMessage
	if err := json.Unmarshal(m.Message, &cm, lenientJSON); err != nil || m.UUID == "" {
		return nil, fmt.Errorf("%w: %s message without uuid or message", ErrEvent, m.Type)
	}
	blocks, _, err := claudeBlocks(cm.Content, m.UUID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEvent, err)
	}
	header := Message{ID: m.UUID, Role: RoleUser, Source: Source{Kind: SourceClaudeCode}}
	if m.Type == "assistant" && hasBlock(blocks, BlockToolResult) {
		return nil, fmt.Errorf("%w: tool_result in an assistant message", ErrEvent)
	}
	if m.Type == "assistant" {
		header.Role, header.Model, header.Usage = RoleAssistant, cm.Model, cm.Usage.toUsage()
		if cm.ID != "" {
			header.ID, header.Source.IDs = cm.ID, []string{cm.ID}
		}
	}
	events := []Event{{Type: EventBlockUpsert, ConversationID: thread, Message: &header}}
	for k := range blocks {
		b := blocks[k]
		ev := Event{Type: EventBlockUpsert, ConversationID: thread, Message: &Message{ID: header.ID}, Block: &b}
		if m.Type == "assistant" {
			index := c.finished[header.ID]
			c.finished[header.ID]++
			ev.Index = &index
		}
		events = append(events, ev)
		events = append(events, subagentEvents(thread, &b, m.ToolUseResult)...)
	}
	return events, nil
}

// subagentEvents reports a Task call as a spawned subagent and its result as completed.
func subagentEvents(thread string, b *Block, toolUseResult jsontext.Value) []Event {
	switch {
	case b.Type == BlockToolUse && b.ToolName == "Task" && b.ToolUseID != "": // no id: no thread to name
		var in struct {
			Description string `json:"description"`
		}
		_ = json.Unmarshal(b.Input, &in, lenientJSON)
		return []Event{{Type: EventSubagentSpawned, ConversationID: thread, ToolUseID: b.ToolUseID, Description: in.Description}}
	case b.Type == BlockToolResult && toolUseResult.Kind() == '{':
		var r struct {
			AgentID string `json:"agentId"`
			Status  string `json:"status"`
		}
		if json.Unmarshal(toolUseResult, &r, lenientJSON) != nil || r.AgentID == "" {
			return nil
		}
		// An id that cannot name the subagent's transcript file is the tool's text, not an id:
		// the thread is still found by its tool use.
		if !claudeFileID(r.AgentID) {
			if b.ToolUseID == "" {
				return nil
			}
			r.AgentID = ""
		}
		status := SubagentCompleted
		if b.IsError {
			status = SubagentFailed
		}
		return []Event{{Type: EventSubagentCompleted, ConversationID: thread, ToolUseID: b.ToolUseID, AgentID: r.AgentID, Status: status}}
	}
	return nil
}
