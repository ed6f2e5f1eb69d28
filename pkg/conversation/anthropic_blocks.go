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

// knownBlocks decodes a content array in one pass when every block is of a known type, carries
// no unknown fields and is written back exactly as read (see faithful); otherwise it reports
// false and the caller goes block by block.
func knownBlocks(content jsontext.Value, lineID string) ([]Block, bool) {
	var ws []anthropicBlockIn
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
		if !ok || !w.faithful(b.Type) {
			return nil, false
		}
		b.ID = lineBlockID(lineID, k)
		blocks[k] = b
	}
	return blocks, true
}

// blockFromAnthropic converts one wire content block into a Block. Unknown types are kept
// whole in Block.Raw; unknown fields of known types go to Block.Extra. A known block that the
// encoder would not write back as read (is_error: false, a null or empty member, a member of
// another block type) keeps the difference in Extra, or is kept whole in Raw when the
// encoder would add a member the block did not have (see keepWireForm).
func blockFromAnthropic(raw jsontext.Value) (Block, error) {
	b, w, err := decodeBlock(raw)
	if err != nil || len(b.Raw) > 0 || w.faithful(b.Type) {
		return b, err
	}
	keepWireForm(raw, &b)
	return b, nil
}

// decodeBlock converts one wire block without checking that it is written back as read.
func decodeBlock(raw jsontext.Value) (Block, *anthropicBlockIn, error) {
	if raw.Kind() != '{' {
		return Block{}, nil, errNotObject
	}
	w := new(anthropicBlockIn)
	if err := json.Unmarshal(raw, w, lenientJSON); err != nil {
		return Block{}, nil, err
	}
	if w.Type == "" {
		return Block{}, nil, errNoType
	}
	if BlockType(w.Type) == BlockToolResult {
		b := Block{Type: BlockToolResult, ToolUseID: w.ToolUseID.V, IsError: w.IsError.V, Extra: w.Rest}
		if err := decodeToolResultContent(w.Content, &b); err != nil {
			return Block{}, nil, err
		}
		return b, w, nil
	}
	if b, ok := fromWire(w); ok {
		return b, w, nil
	}
	b := Block{Type: BlockType(w.Type), Raw: raw.Clone()}
	if b.Type == BlockImage || b.Type == BlockDocument {
		b.Media, _ = mediaOf(w) // what converters and token counters can read; Raw is written back
	}
	return b, w, nil
}

// fromWire converts a block of a known type; a tool_result's content must be a string or
// absent (a list needs blockFromAnthropic).
func fromWire(w *anthropicBlockIn) (Block, bool) {
	b := Block{Type: BlockType(w.Type)}
	switch b.Type {
	case BlockText:
		b.Text = w.Text.V
	case BlockThinking:
		b.Text = w.Thinking.V
		b.Signature = w.Signature.V
	case BlockRedactedThinking:
		b.Data = w.Data.V
	case BlockToolUse:
		b.ToolUseID, b.ToolName, b.Input = w.ID.V, w.Name.V, w.Input
	case BlockToolResult:
		b.ToolUseID, b.IsError = w.ToolUseID.V, w.IsError.V
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
		m, ok := mediaOf(w)
		if !ok {
			return Block{}, false
		}
		b.Media = m
	default:
		return Block{}, false
	}
	if len(w.Rest) > 0 {
		b.Extra = w.Rest
	}
	return b, true
}

// mediaOf reads an image or document source; ok is false for a source the model cannot
// hold (members it has no field for, or not an object), which is then kept whole in Raw.
func mediaOf(w *anthropicBlockIn) (*MediaRef, bool) {
	var m *MediaRef
	ok := true
	switch w.Source.Kind() {
	case 0, 'n':
	case '{':
		var s anthropicSourceIn
		if json.Unmarshal(w.Source, &s, lenientJSON) != nil {
			return nil, false
		}
		ok = len(s.Rest) == 0
		m = &MediaRef{SourceType: s.Type.V, MediaType: s.MediaType.V, Data: s.Data.V, URL: s.URL.V, FileID: s.FileID.V}
	default:
		ok = false
	}
	if w.Title.V != "" {
		m = orEmptyMedia(m)
		m.Title = w.Title.V
	}
	return m, ok
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
	rest, overrides := splitExtra(b.Extra)
	w := anthropicBlock{Type: string(b.Type), Rest: rest}
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
	out, err := json.Marshal(&w, lenientJSON)
	if err != nil || len(overrides) == 0 {
		return out, err
	}
	return applyOverrides(out, b, overrides), nil
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

func orEmptyMedia(m *MediaRef) *MediaRef {
	if m == nil {
		return &MediaRef{}
	}
	return m
}
