package conversation

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// OpenAIMessage is one message of the OpenAI chat completions API.
type OpenAIMessage struct {
	Role string `json:"role"`
	// Content is a string, null, or a list of content parts.
	Content    jsontext.Value   `json:"content,omitzero"`
	Name       string           `json:"name,omitzero"`
	ToolCalls  []OpenAIToolCall `json:"tool_calls,omitzero"`
	ToolCallID string           `json:"tool_call_id,omitzero"`
	// Rest keeps fields this package does not model (refusal, audio, ...).
	Rest jsontext.Value `json:",embed"`
}

// OpenAIToolCall is one function call of an assistant message.
type OpenAIToolCall struct {
	ID       string             `json:"id"`
	Type     string             `json:"type"`
	Function OpenAIFunctionCall `json:"function"`
}

// OpenAIFunctionCall is the function and its arguments, a JSON string as the model wrote it.
type OpenAIFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type openAIPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitzero"`
	ImageURL *openAIImageURL `json:"image_url,omitzero"`
	Rest     jsontext.Value  `json:",embed"`
}

type openAIImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitzero"`
}

// ToOpenAI renders the state as OpenAI chat messages: the system prompt first, one
// role:"tool" message per tool result, tool calls with their exact argument strings.
// Thinking, redacted thinking, documents and unknown blocks have no OpenAI form and are left
// out.
func ToOpenAI(s *State) ([]OpenAIMessage, error) {
	out := make([]OpenAIMessage, 0, len(s.Messages)+1)
	if s.System != nil {
		out = append(out, OpenAIMessage{Role: "system", Content: mustString(s.System.Text())})
	}
	for i := range s.Messages {
		msgs, err := openAIMessages(&s.Messages[i])
		if err != nil {
			return nil, fmt.Errorf("message %s: %w", s.Messages[i].ID, err)
		}
		out = append(out, msgs...)
	}
	return out, nil
}

func openAIMessages(m *Message) ([]OpenAIMessage, error) {
	var rest jsontext.Value
	if m.Source.Kind == SourceOpenAI {
		rest = m.Source.Raw
	}
	switch m.Role {
	case RoleAssistant:
		om := OpenAIMessage{Role: "assistant", Name: m.Name, Rest: rest, Content: jsontext.Value("null")}
		if text := m.Text(); text != "" || !m.HasToolUse() {
			om.Content = mustString(text)
		}
		for _, b := range m.Blocks {
			if b.Type != BlockToolUse {
				continue
			}
			args := b.Arguments
			if args == "" {
				args = string(toolInput(&b))
			}
			om.ToolCalls = append(om.ToolCalls, OpenAIToolCall{ID: b.ToolUseID, Type: "function", Function: OpenAIFunctionCall{Name: b.ToolName, Arguments: args}})
		}
		return []OpenAIMessage{om}, nil
	case RoleTool:
		var out []OpenAIMessage
		var others []Block
		for _, b := range m.Blocks {
			if b.Type != BlockToolResult {
				others = append(others, b)
				continue
			}
			out = append(out, OpenAIMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: mustString(toolResultText(&b))})
		}
		if len(out) == 1 {
			out[0].Rest = rest
		}
		if len(others) > 0 {
			user := Message{Role: RoleUser, Blocks: others}
			content, err := openAIContent(&user)
			if err != nil {
				return nil, err
			}
			out = append(out, OpenAIMessage{Role: "user", Content: content})
		}
		return out, nil
	default:
		content, err := openAIContent(m)
		if err != nil {
			return nil, err
		}
		return []OpenAIMessage{{Role: string(m.Role), Name: m.Name, Content: content, Rest: rest}}, nil
	}
}

// toolResultText flattens a tool result to the text OpenAI accepts; an error result says so.
func toolResultText(b *Block) string {
	text := b.Text
	if b.Content != nil {
		parts := make([]string, 0, len(b.Content))
		for _, c := range b.Content {
			if c.Type == BlockText {
				parts = append(parts, c.Text)
			}
		}
		text = strings.Join(parts, "\n")
	}
	return text
}

// openAIContent is a string for plain text content, else a list of parts. Provider extras
// (Block.Extra, Block.Raw) are written back only to the provider they came from: an
// Anthropic cache_control in an OpenAI request would be refused.
func openAIContent(m *Message) (jsontext.Value, error) {
	native := m.Source.Kind == SourceOpenAI
	simple := len(m.Blocks) <= 1
	for _, b := range m.Blocks {
		if b.Type != BlockText || native && len(b.Extra) > 0 {
			simple = false
		}
	}
	if simple {
		return mustString(m.Text()), nil
	}
	parts := make([]jsontext.Value, 0, len(m.Blocks))
	for _, b := range m.Blocks {
		var extra jsontext.Value
		if native {
			extra = b.Extra
		}
		var part any
		switch {
		case b.Type == BlockText:
			part = openAIPart{Type: "text", Text: b.Text, Rest: extra}
		case b.Type == BlockImage && b.Media != nil:
			url := b.Media.URL
			if url == "" && b.Media.SourceType == "base64" {
				url = "data:" + b.Media.MediaType + ";base64," + b.Media.Data
			}
			if url != "" {
				part = openAIPart{Type: "image_url", ImageURL: &openAIImageURL{URL: url}, Rest: extra}
			}
		case native && len(b.Raw) > 0:
			parts = append(parts, b.Raw)
		}
		if part != nil {
			raw, err := json.Marshal(part, lenientJSON)
			if err != nil {
				return nil, err
			}
			parts = append(parts, raw)
		}
	}
	return json.Marshal(parts, lenientJSON)
}

// FromOpenAI reads OpenAI chat messages. Leading system (or developer) messages become the
// system prompt; consecutive role:"tool" messages become one RoleTool message; message ids
// are "openai-<index>" of the first source message.
func FromOpenAI(msgs []OpenAIMessage) (State, error) {
	s := NewState("")
	i := 0
	for ; i < len(msgs) && (msgs[i].Role == "system" || msgs[i].Role == "developer"); i++ {
		text, err := openAIText(msgs[i].Content)
		if err != nil {
			return State{}, fmt.Errorf("message %d: %w", i, err)
		}
		if s.System == nil {
			s.System = &Message{ID: "openai-" + strconv.Itoa(i), Role: RoleSystem}
		}
		s.System.Blocks = append(s.System.Blocks, Block{Type: BlockText, Text: text})
	}
	for ; i < len(msgs); i++ {
		om := &msgs[i]
		m := Message{ID: "openai-" + strconv.Itoa(i), Seq: int64(len(s.Messages) + 1), Name: om.Name, Source: Source{Kind: SourceOpenAI, Raw: om.Rest}}
		switch om.Role {
		case "tool":
			b := Block{Type: BlockToolResult, ToolUseID: om.ToolCallID}
			text, err := openAIText(om.Content)
			if err != nil {
				return State{}, fmt.Errorf("message %d: %w", i, err)
			}
			b.Text = text
			if n := len(s.Messages); n > 0 && s.Messages[n-1].Role == RoleTool && msgs[i-1].Role == "tool" {
				last := &s.Messages[n-1]
				last.Blocks = append(last.Blocks, b)
				last.Source.Raw = nil // several wire messages: no single place for their extras
				continue
			}
			m.Role, m.Blocks = RoleTool, []Block{b}
		case "assistant":
			m.Role = RoleAssistant
			if err := openAIBlocks(om.Content, &m); err != nil {
				return State{}, fmt.Errorf("message %d: %w", i, err)
			}
			for _, tc := range om.ToolCalls {
				b := Block{Type: BlockToolUse, ToolUseID: tc.ID, ToolName: tc.Function.Name, Arguments: tc.Function.Arguments}
				if v := jsontext.Value(tc.Function.Arguments); v.IsValid() {
					b.Input = v
				}
				m.Blocks = append(m.Blocks, b)
			}
		case "user", "system", "developer":
			m.Role = RoleUser
			if om.Role != "user" {
				m.Role = RoleSystem
			}
			if err := openAIBlocks(om.Content, &m); err != nil {
				return State{}, fmt.Errorf("message %d: %w", i, err)
			}
		default:
			return State{}, fmt.Errorf("message %d: unknown role %q", i, om.Role)
		}
		s.Messages = append(s.Messages, m)
	}
	NumberTurns(s.Messages)
	makeRawUTF8(&s) // the wire form was read leniently: raw values as its strings
	return s, nil
}

// openAIText reads content that must be text: a string, null, or a list of text parts.
func openAIText(content jsontext.Value) (string, error) {
	var m Message
	if err := openAIBlocks(content, &m); err != nil {
		return "", err
	}
	return m.Text(), nil
}

func openAIBlocks(content jsontext.Value, m *Message) error {
	switch content.Kind() {
	case 0, 'n':
		return nil
	case '"':
		var text string
		if err := json.Unmarshal(content, &text, lenientJSON); err != nil {
			return err
		}
		m.Blocks = append(m.Blocks, Block{Type: BlockText, Text: text})
		return nil
	case '[':
		var parts []openAIPart
		if err := json.Unmarshal(content, &parts, lenientJSON); err != nil {
			return err
		}
		for _, p := range parts {
			switch {
			case p.Type == "text":
				m.Blocks = append(m.Blocks, Block{Type: BlockText, Text: p.Text, Extra: p.Rest})
			case p.Type == "image_url" && p.ImageURL != nil && p.ImageURL.URL == "":
				return errors.New("image_url part without a url") // nothing to render it back from
			case p.Type == "image_url" && p.ImageURL != nil:
				m.Blocks = append(m.Blocks, Block{Type: BlockImage, Media: imageFromURL(p.ImageURL.URL), Extra: p.Rest})
			case p.Type == "" || BlockType(p.Type) != BlockText && isModelBlockType(BlockType(p.Type)):
				// Kept raw, it would pass for a block of the model (a tool_result in a user
				// message); OpenAI has no part of these names.
				return fmt.Errorf("content part of type %q", p.Type)
			default:
				raw, err := json.Marshal(p, lenientJSON)
				if err != nil {
					return err
				}
				m.Blocks = append(m.Blocks, Block{Type: BlockType(p.Type), Raw: raw})
			}
		}
		return nil
	}
	return fmt.Errorf("content is a JSON %v", content.Kind())
}

func imageFromURL(url string) *MediaRef {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		if mediaType, data, ok := strings.Cut(rest, ";base64,"); ok {
			return &MediaRef{SourceType: "base64", MediaType: mediaType, Data: data}
		}
	}
	return &MediaRef{SourceType: "url", URL: url}
}
