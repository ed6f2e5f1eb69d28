package conversation

import (
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// AnthropicConversation is the system prompt and messages of an Anthropic Messages API
// request, ready to send.
type AnthropicConversation struct {
	// System is a list of text blocks (or a string, when read).
	System   jsontext.Value     `json:"system,omitzero"`
	Messages []AnthropicMessage `json:"messages"`
}

// AnthropicMessage is one message; Content is a list of content blocks (or a string, when read).
type AnthropicMessage struct {
	Role    string         `json:"role"`
	Content jsontext.Value `json:"content"`
}

// ToAnthropic renders the state for the Messages API. Consecutive messages of the same API
// role are merged (RoleTool and RoleUser are both "user"), with tool_result blocks first as
// the API requires. Thinking blocks are written verbatim, signatures included. A
// mid-conversation RoleSystem message becomes user text (the API has no system turns).
func ToAnthropic(s *State) (AnthropicConversation, error) {
	var conv AnthropicConversation
	if s.System != nil && len(s.System.Blocks) > 0 {
		system, err := anthropicContent(s.System.Blocks)
		if err != nil {
			return conv, fmt.Errorf("system: %w", err)
		}
		conv.System = system
	}
	var role string
	var pending []Block
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		if role == "user" {
			pending = resultsFirst(pending)
		}
		content, err := anthropicContent(pending)
		if err != nil {
			return err
		}
		conv.Messages = append(conv.Messages, AnthropicMessage{Role: role, Content: content})
		pending = nil
		return nil
	}
	for i := range s.Messages {
		m := &s.Messages[i]
		blocks := forAnthropic(m)
		if len(blocks) == 0 {
			continue // sends nothing, so it must not split its neighbours into two turns of one role
		}
		r := "user"
		if m.Role == RoleAssistant {
			r = "assistant"
		}
		if r != role {
			if err := flush(); err != nil {
				return conv, fmt.Errorf("message %s: %w", m.ID, err)
			}
			role = r
		}
		pending = append(pending, blocks...)
	}
	if err := flush(); err != nil {
		return conv, err
	}
	if conv.Messages == nil {
		conv.Messages = []AnthropicMessage{}
	}
	return conv, nil
}

func anthropicContent(blocks []Block) (jsontext.Value, error) {
	items := make([]jsontext.Value, 0, len(blocks))
	for i := range blocks {
		b := blocks[i]
		b.Status = BlockComplete
		item, err := blockToAnthropic(&b)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	return json.Marshal(items, lenientJSON)
}

// FromAnthropic reads a Messages API conversation. A user message holding tool results
// becomes a RoleTool message; message ids are "anthropic-<index>".
//
// The wire form is read leniently; its invalid UTF-8 is replaced (as the decoder does in
// strings) before the blocks are read, so the raw values the state keeps are valid and whether
// a block is kept structured or raw is decided on the bytes kept: reading the state's wire form
// back decides the same.
func FromAnthropic(conv AnthropicConversation) (State, error) {
	s := NewState("")
	if len(conv.System) > 0 && conv.System.Kind() != 'n' {
		blocks, _, err := claudeBlocks(validUTF8(conv.System), "")
		if err != nil {
			return State{}, fmt.Errorf("system: %w", err)
		}
		s.System = &Message{ID: "anthropic-system", Role: RoleSystem, Blocks: clearIDs(blocks)}
	}
	for i, am := range conv.Messages {
		blocks, _, err := claudeBlocks(validUTF8(am.Content), "")
		if err != nil {
			return State{}, fmt.Errorf("message %d: %w", i, err)
		}
		m := Message{ID: "anthropic-" + strconv.Itoa(i), Seq: int64(i + 1), Blocks: clearIDs(blocks), Source: Source{Kind: SourceAnthropic}}
		switch am.Role {
		case "assistant":
			m.Role = RoleAssistant
			if hasBlock(m.Blocks, BlockToolResult) {
				return State{}, fmt.Errorf("message %d: tool_result in an assistant message", i)
			}
		case "user":
			m.Role = RoleUser
			if hasBlock(m.Blocks, BlockToolResult) {
				m.Role, m.Blocks = RoleTool, resultsFirst(m.Blocks)
			}
		default:
			return State{}, fmt.Errorf("message %d: unknown role %q", i, am.Role)
		}
		s.Messages = append(s.Messages, m)
	}
	NumberTurns(s.Messages)
	return s, nil
}

func clearIDs(blocks []Block) []Block {
	for i := range blocks {
		blocks[i].ID = ""
	}
	return blocks
}

// forAnthropic is what of a message the Messages API can take: provider extras and unknown
// blocks only when they came from Anthropic or Claude Code (an OpenAI content part would be
// refused), and no unsigned thinking.
func forAnthropic(m *Message) []Block {
	blocks := sendable(m.Blocks)
	if m.Source.Kind != SourceOpenAI && m.Source.Kind != SourceOpenCode {
		return blocks
	}
	out := make([]Block, 0, len(blocks))
	for _, b := range blocks {
		if len(b.Raw) > 0 {
			continue
		}
		b.Extra = nil
		out = append(out, b)
	}
	return out
}

// sendable leaves out thinking blocks without a signature (from providers that do not sign
// them): the Anthropic API refuses a thinking block it cannot verify.
func sendable(blocks []Block) []Block {
	for i := range blocks {
		if blocks[i].Type == BlockThinking && blocks[i].Signature == "" {
			out := make([]Block, 0, len(blocks)-1)
			for _, b := range blocks {
				if b.Type != BlockThinking || b.Signature != "" {
					out = append(out, b)
				}
			}
			return out
		}
	}
	return blocks
}
