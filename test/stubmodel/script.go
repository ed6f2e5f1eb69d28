package stubmodel

import (
	"encoding/json"
	"fmt"
)

// Reply is what the model answers to one request: text, tool calls, or both (the tool calls
// after the text). A Hold reply answers nothing: the request stays open until the client goes
// away or the stub closes.
type Reply struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	Hold      bool       `json:"hold,omitempty"`
}

// ToolCall is one call the model asks the agent to make.
type ToolCall struct {
	// ID is the call's id (Anthropic tool_use id, OpenAI call_id).
	ID   string `json:"id"`
	Name string `json:"name"`
	// Input is the call's arguments, a JSON object.
	Input json.RawMessage `json:"input"`
}

// stopReason is Anthropic's stop_reason for the reply.
func (r Reply) stopReason() string {
	if len(r.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// input is the call's arguments, "{}" when none were given.
func (c ToolCall) input() json.RawMessage {
	if len(c.Input) == 0 {
		return json.RawMessage("{}")
	}
	return c.Input
}

// validate refuses a reply the APIs cannot express.
func (r Reply) validate() error {
	if r.Hold && (r.Text != "" || len(r.ToolCalls) > 0) {
		return fmt.Errorf("a hold reply has no content")
	}
	if !r.Hold && r.Text == "" && len(r.ToolCalls) == 0 {
		return fmt.Errorf("a reply needs text, tool calls or hold")
	}
	for _, c := range r.ToolCalls {
		if c.ID == "" || c.Name == "" {
			return fmt.Errorf("tool call %+v: id and name are required", c)
		}
		var obj map[string]any
		if err := json.Unmarshal(c.input(), &obj); err != nil {
			return fmt.Errorf("tool call %s: input is not a JSON object: %w", c.ID, err)
		}
	}
	return nil
}
