package stubmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropicRequest is the part of a Messages API request the stub reads.
type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

// anthropicConversation lists a Messages API request's messages as entries, one per content
// block; thinking and other blocks are left out.
func anthropicConversation(body []byte) (anthropicRequest, []Entry, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return req, nil, err
	}
	var out []Entry
	for _, m := range req.Messages {
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			out = append(out, Entry{Role: m.Role, Kind: KindText, Text: text})
			continue
		}
		var blocks []anthropicBlock
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return req, nil, fmt.Errorf("message content: %w", err)
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				out = append(out, Entry{Role: m.Role, Kind: KindText, Text: b.Text})
			case "tool_use":
				out = append(out, Entry{Role: m.Role, Kind: KindToolUse, Name: b.Name, CallID: b.ID})
			case "tool_result":
				out = append(out, Entry{Role: m.Role, Kind: KindToolResult, CallID: b.ToolUseID, Text: contentText(b.Content)})
			}
		}
	}
	return req, out, nil
}

// contentText is a tool result's content as text: the string itself, or its text blocks joined.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []anthropicBlock
	_ = json.Unmarshal(raw, &blocks)
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == "text" || b.Type == "input_text" || b.Type == "output_text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "")
}

// anthropicBlocks are the reply's content blocks.
func anthropicBlocks(r Reply) []map[string]any {
	var blocks []map[string]any
	if r.Text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": r.Text})
	}
	for _, c := range r.ToolCalls {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.input()})
	}
	return blocks
}

func anthropicUsage() map[string]any {
	return map[string]any{"input_tokens": 1, "output_tokens": 1}
}

// writeAnthropic answers a Messages API request with the reply, as one JSON message or as the
// stream of events the API sends.
func writeAnthropic(w http.ResponseWriter, req anthropicRequest, id string, r Reply) {
	if !req.Stream {
		writeJSON(w, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": anthropicBlocks(r), "stop_reason": r.stopReason(), "stop_sequence": nil,
			"usage": anthropicUsage(),
		})
		return
	}
	ev := newEventWriter(w)
	ev.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(),
	}})
	for i, b := range anthropicBlocks(r) {
		start := map[string]any{"type": b["type"]}
		var delta map[string]any
		if b["type"] == "text" {
			start["text"] = ""
			delta = map[string]any{"type": "text_delta", "text": b["text"]}
		} else {
			start["id"], start["name"], start["input"] = b["id"], b["name"], map[string]any{}
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(b["input"].(json.RawMessage))}
		}
		ev.send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start})
		ev.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": delta})
		ev.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev.send("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": r.stopReason(), "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1},
	})
	ev.send("message_stop", map[string]any{"type": "message_stop"})
}
