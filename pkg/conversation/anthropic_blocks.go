package conversation

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// anthropicBlock is an Anthropic Messages API content block on the wire. Claude Code
// transcripts use the same shape.
type anthropicBlock struct {
	Type      string           `json:"type"`
	Text      *string          `json:"text,omitzero"`
	Thinking  *string          `json:"thinking,omitzero"`
	Signature *string          `json:"signature,omitzero"`
	Data      *string          `json:"data,omitzero"`
	ID        string           `json:"id,omitzero"`
	Name      string           `json:"name,omitzero"`
	Input     jsontext.Value   `json:"input,omitzero"`
	ToolUseID string           `json:"tool_use_id,omitzero"`
	Content   jsontext.Value   `json:"content,omitzero"`
	IsError   bool             `json:"is_error,omitzero"`
	Source    *anthropicSource `json:"source,omitzero"`
	Title     string           `json:"title,omitzero"`
	Rest      jsontext.Value   `json:",embed"`
}

type anthropicSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitzero"`
	Data      string `json:"data,omitzero"`
	URL       string `json:"url,omitzero"`
	FileID    string `json:"file_id,omitzero"`
	// Rest holds members MediaRef has no field for (e.g. the blocks of a "content" source):
	// a block with any is kept whole in Block.Raw.
	Rest jsontext.Value `json:",embed"`
}

var errNotObject = errors.New("content block is not a JSON object")

// errNoType: the model has no block without a type (State.Validate refuses one).
var errNoType = errors.New("content block without a type")

// knownBlocks decodes a content array in one pass when every block is of a known type and
// carries no unknown fields; otherwise it reports false and the caller goes block by block.
func knownBlocks(content jsontext.Value, lineID string) ([]Block, bool) {
	var ws []anthropicBlock
	if json.Unmarshal(content, &ws, lenientJSON) != nil {
		return nil, false
	}
	blocks := make([]Block, len(ws))
	for k := range ws {
		w := &ws[k]
		if len(w.Rest) > 0 || BlockType(w.Type) == BlockToolResult && w.Content.Kind() == '[' {
			return nil, false
		}
		b, ok := fromWire(w)
		if !ok {
			return nil, false
		}
		b.ID = lineBlockID(lineID, k)
		blocks[k] = b
	}
	return blocks, true
}

// blockFromAnthropic converts one wire content block into a Block. Unknown types are kept
// whole in Block.Raw; unknown fields of known types go to Block.Extra.
func blockFromAnthropic(raw jsontext.Value) (Block, error) {
	if raw.Kind() != '{' {
		return Block{}, errNotObject
	}
	var w anthropicBlock
	if err := json.Unmarshal(raw, &w, lenientJSON); err != nil {
		return Block{}, err
	}
	if w.Type == "" {
		return Block{}, errNoType
	}
	if BlockType(w.Type) == BlockToolResult {
		b := Block{Type: BlockToolResult, ToolUseID: w.ToolUseID, IsError: w.IsError, Extra: w.Rest}
		if err := decodeToolResultContent(w.Content, &b); err != nil {
			return Block{}, err
		}
		return b, nil
	}
	if b, ok := fromWire(&w); ok {
		return b, nil
	}
	b := Block{Type: BlockType(w.Type), Raw: raw.Clone()}
	if b.Type == BlockImage || b.Type == BlockDocument {
		b.Media = mediaOf(&w) // what converters and token counters can read; Raw is written back
	}
	return b, nil
}

// fromWire converts a block of a known type; a tool_result's content must be a string or
// absent (a list needs blockFromAnthropic).
func fromWire(w *anthropicBlock) (Block, bool) {
	b := Block{Type: BlockType(w.Type)}
	switch b.Type {
	case BlockText:
		b.Text = deref(w.Text)
	case BlockThinking:
		b.Text = deref(w.Thinking)
		b.Signature = deref(w.Signature)
	case BlockRedactedThinking:
		b.Data = deref(w.Data)
	case BlockToolUse:
		b.ToolUseID, b.ToolName, b.Input = w.ID, w.Name, w.Input
	case BlockToolResult:
		b.ToolUseID, b.IsError = w.ToolUseID, w.IsError
		switch w.Content.Kind() {
		case 0, 'n':
		case '"':
			if json.Unmarshal(w.Content, &b.Text, lenientJSON) != nil {
				return Block{}, false
			}
		default:
			return Block{}, false
		}
	case BlockImage, BlockDocument:
		if w.Source != nil && len(w.Source.Rest) > 0 {
			return Block{}, false
		}
		b.Media = mediaOf(w)
	default:
		return Block{}, false
	}
	if len(w.Rest) > 0 {
		b.Extra = w.Rest
	}
	return b, true
}

func mediaOf(w *anthropicBlock) *MediaRef {
	var m *MediaRef
	if s := w.Source; s != nil {
		m = &MediaRef{SourceType: s.Type, MediaType: s.MediaType, Data: s.Data, URL: s.URL, FileID: s.FileID}
	}
	if w.Title != "" {
		m = orEmptyMedia(m)
		m.Title = w.Title
	}
	return m
}

func decodeToolResultContent(content jsontext.Value, b *Block) error {
	switch content.Kind() {
	case 0, 'n':
		return nil
	case '"':
		return json.Unmarshal(content, &b.Text, lenientJSON)
	case '[':
		var items []jsontext.Value
		if err := json.Unmarshal(content, &items, lenientJSON); err != nil {
			return err
		}
		b.Content = make([]Block, 0, len(items))
		for _, item := range items {
			inner, err := blockFromAnthropic(item)
			if err != nil {
				return err
			}
			b.Content = append(b.Content, inner)
		}
		return nil
	default:
		return fmt.Errorf("tool_result content is a JSON %v", content.Kind())
	}
}

// blockToAnthropic converts a Block back to its wire form.
func blockToAnthropic(b *Block) (jsontext.Value, error) {
	if len(b.Raw) > 0 {
		return b.Raw, nil
	}
	w := anthropicBlock{Type: string(b.Type), Rest: b.Extra}
	switch b.Type {
	case BlockText:
		w.Text = &b.Text
	case BlockThinking:
		w.Thinking, w.Signature = &b.Text, &b.Signature
	case BlockRedactedThinking:
		w.Data = &b.Data
	case BlockToolUse:
		w.ID, w.Name, w.Input = b.ToolUseID, b.ToolName, toolInput(b)
	case BlockToolResult:
		w.ToolUseID, w.IsError = b.ToolUseID, b.IsError
		content, err := toolResultContent(b)
		if err != nil {
			return nil, err
		}
		w.Content = content
	case BlockImage, BlockDocument:
		if m := b.Media; m != nil {
			w.Title = m.Title
			if m.SourceType != "" {
				w.Source = &anthropicSource{Type: m.SourceType, MediaType: m.MediaType, Data: m.Data, URL: m.URL, FileID: m.FileID}
			}
		}
	default:
		return nil, fmt.Errorf("block of type %q has no raw JSON to write back", b.Type)
	}
	return json.Marshal(&w, lenientJSON)
}

func toolResultContent(b *Block) (jsontext.Value, error) {
	if b.Content == nil {
		return json.Marshal(b.Text, lenientJSON)
	}
	items := make([]jsontext.Value, 0, len(b.Content))
	for i := range b.Content {
		item, err := blockToAnthropic(&b.Content[i])
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	return json.Marshal(items, lenientJSON)
}

// toolInput is the tool call's arguments as a JSON value: Input, or else the provider's
// argument string when it is valid JSON, or else an empty object.
func toolInput(b *Block) jsontext.Value {
	if len(b.Input) > 0 {
		return b.Input
	}
	if b.Arguments != "" && jsontext.Value(b.Arguments).IsValid() {
		return jsontext.Value(b.Arguments)
	}
	return jsontext.Value("{}")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func orEmptyMedia(m *MediaRef) *MediaRef {
	if m == nil {
		return &MediaRef{}
	}
	return m
}
