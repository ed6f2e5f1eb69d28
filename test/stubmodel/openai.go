package stubmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// responsesRequest is the part of a Responses API request the stub reads.
type responsesRequest struct {
	Model  string          `json:"model"`
	Stream bool            `json:"stream"`
	Input  json.RawMessage `json:"input"`
}

type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Output    json.RawMessage `json:"output"`
	Arguments string          `json:"arguments"`
}

// responsesConversation lists a Responses API request's input items as entries; reasoning and
// other items are left out, as are system and developer messages.
func responsesConversation(body []byte) (responsesRequest, []Entry, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return req, nil, err
	}
	var text string
	if json.Unmarshal(req.Input, &text) == nil {
		return req, []Entry{{Role: "user", Kind: KindText, Text: text}}, nil
	}
	var items []responsesItem
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return req, nil, fmt.Errorf("input: %w", err)
	}
	var out []Entry
	for _, it := range items {
		switch it.Type {
		case "", "message":
			if it.Role == "system" || it.Role == "developer" {
				continue
			}
			out = append(out, Entry{Role: it.Role, Kind: KindText, Text: contentText(it.Content)})
		case "function_call":
			out = append(out, Entry{Role: "assistant", Kind: KindToolUse, Name: it.Name, CallID: it.CallID})
		case "function_call_output":
			out = append(out, Entry{Role: "tool", Kind: KindToolResult, CallID: it.CallID, Text: contentText(it.Output)})
		}
	}
	return req, out, nil
}

// responsesOutput is the reply as Responses API output items.
func responsesOutput(id string, r Reply) []map[string]any {
	var out []map[string]any
	if r.Text != "" {
		out = append(out, map[string]any{
			"type": "message", "id": "msg_" + id, "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}}},
		})
	}
	for _, c := range r.ToolCalls {
		out = append(out, map[string]any{
			"type": "function_call", "id": "fc_" + c.ID, "call_id": c.ID, "name": c.Name,
			"arguments": string(c.input()), "status": "completed",
		})
	}
	return out
}

// writeResponses answers a Responses API request with the reply, whole or as its event stream.
func writeResponses(w http.ResponseWriter, req responsesRequest, id string, seq int, r Reply) {
	output := responsesOutput(id, r)
	response := func(status string, output []map[string]any) map[string]any {
		if output == nil {
			output = []map[string]any{}
		}
		return map[string]any{
			"id": "resp_" + id, "object": "response", "created_at": seq, "status": status, "model": req.Model,
			"output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
			"usage": map[string]any{
				"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
				"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			},
		}
	}
	if !req.Stream {
		writeJSON(w, response("completed", output))
		return
	}
	ev := newEventWriter(w)
	n := 0
	send := func(name string, data map[string]any) {
		data["type"], data["sequence_number"] = name, n
		n++
		ev.send(name, data)
	}
	send("response.created", map[string]any{"response": response("in_progress", nil)})
	for i, item := range output {
		send("response.output_item.added", map[string]any{"output_index": i, "item": item})
		if item["type"] == "message" {
			send("response.output_text.delta", map[string]any{"output_index": i, "content_index": 0, "item_id": item["id"], "delta": r.Text})
			send("response.output_text.done", map[string]any{"output_index": i, "content_index": 0, "item_id": item["id"], "text": r.Text})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	send("response.completed", map[string]any{"response": response("completed", output)})
}

// chatRequest is the part of a Chat Completions request the stub reads.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

// chatConversation lists a Chat Completions request's messages as entries (system and
// developer messages left out): an assistant message's text, then its tool calls.
func chatConversation(body []byte) (chatRequest, []Entry, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return req, nil, err
	}
	var out []Entry
	for _, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
		case "tool":
			out = append(out, Entry{Role: "tool", Kind: KindToolResult, CallID: m.ToolCallID, Text: contentText(m.Content)})
		default:
			if t := contentText(m.Content); t != "" {
				out = append(out, Entry{Role: m.Role, Kind: KindText, Text: t})
			}
			for _, c := range m.ToolCalls {
				out = append(out, Entry{Role: m.Role, Kind: KindToolUse, Name: c.Function.Name, CallID: c.ID})
			}
		}
	}
	return req, out, nil
}

// writeChat answers a Chat Completions request with the reply, whole or as chunks.
func writeChat(w http.ResponseWriter, req chatRequest, id string, seq int, r Reply) {
	finish := "stop"
	calls := make([]map[string]any, 0, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		finish = "tool_calls"
		calls = append(calls, map[string]any{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(c.input())},
		})
	}
	message := map[string]any{"role": "assistant", "content": nil}
	if r.Text != "" {
		message["content"] = r.Text
	}
	if len(calls) > 0 {
		message["tool_calls"] = calls
	}
	usage := map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
	if !req.Stream {
		writeJSON(w, map[string]any{
			"id": "chatcmpl-" + id, "object": "chat.completion", "created": seq, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}
	ev := newEventWriter(w)
	chunk := func(delta map[string]any, finish any) {
		ev.send("", map[string]any{
			"id": "chatcmpl-" + id, "object": "chat.completion.chunk", "created": seq, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
	}
	chunk(message, nil)
	chunk(map[string]any{}, finish)
	ev.done()
}
