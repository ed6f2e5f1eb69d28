package stubmodel

import (
	"encoding/json"
	"time"
)

// API names the wire format a request came in.
type API string

const (
	AnthropicMessages API = "anthropic-messages"
	OpenAIResponses   API = "openai-responses"
	OpenAIChat        API = "openai-chat"
)

// Kind is what one Entry of a conversation is.
type Kind string

const (
	KindText       Kind = "text"
	KindToolUse    Kind = "tool_use"
	KindToolResult Kind = "tool_result"
)

// Entry is one piece of the conversation a request carries, the same for every API: a text of
// a role, a tool call the assistant made, or a tool's result. System prompts and instructions
// are not entries (they are not the conversation).
type Entry struct {
	Role string `json:"role"`
	Kind Kind   `json:"kind"`
	// Text is the text, or the tool result's content as text.
	Text string `json:"text,omitempty"`
	// Name is the tool's name (tool_use).
	Name string `json:"name,omitempty"`
	// CallID links a tool call and its result.
	CallID string `json:"callID,omitempty"`
}

// Request is one model request the stub received.
type Request struct {
	// Seq numbers the requests from 1 in the order they arrived.
	Seq  int       `json:"seq"`
	API  API       `json:"api"`
	Path string    `json:"path"`
	Time time.Time `json:"time"`
	// Stream says whether the client asked for a streamed answer.
	Stream bool `json:"stream"`
	// Held says the script held this request unanswered.
	Held bool `json:"held"`
	// Conversation is what the request carries, in order.
	Conversation []Entry `json:"conversation"`
	// Body is the request body as received.
	Body json.RawMessage `json:"body"`
}
