package conversation

import (
	"bytes"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Reading an Anthropic / Claude Code content block so that it is written back as read. The
// model holds a block's meaning, and the encoder (blockToAnthropic) writes one form of it:
// "is_error" only when true, "content" always, an empty "id" never. A block read in another
// form — "is_error": false as Claude Code writes it, a null member, a member of another block
// type — would come back different. anthropicBlockIn records which members a block had and
// whether they were null, faithful tells the common case (written back exactly) apart cheaply,
// and keepWireForm keeps the difference for the rest.

// wireString is a string member as read: whether it was there, and whether it was null.
type wireString struct {
	V         string
	Set, Null bool
}

// UnmarshalJSONFrom implements json.UnmarshalerFrom (called for null too).
func (s *wireString) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	s.Set = true
	if dec.PeekKind() == 'n' {
		s.Null = true
		_, err := dec.ReadToken()
		return err
	}
	return json.UnmarshalDecode(dec, &s.V, lenientJSON)
}

// wireBool is a boolean member as read.
type wireBool struct {
	V, Set, Null bool
}

// UnmarshalJSONFrom implements json.UnmarshalerFrom (called for null too).
func (b *wireBool) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	b.Set = true
	if dec.PeekKind() == 'n' {
		b.Null = true
		_, err := dec.ReadToken()
		return err
	}
	return json.UnmarshalDecode(dec, &b.V, lenientJSON)
}

// anthropicBlockIn is a content block as read: every member the encoder knows, with its
// presence; the members of no block type in Rest.
type anthropicBlockIn struct {
	Type      string         `json:"type"`
	Text      wireString     `json:"text"`
	Thinking  wireString     `json:"thinking"`
	Signature wireString     `json:"signature"`
	Data      wireString     `json:"data"`
	ID        wireString     `json:"id"`
	Name      wireString     `json:"name"`
	Input     jsontext.Value `json:"input"`
	ToolUseID wireString     `json:"tool_use_id"`
	Content   jsontext.Value `json:"content"`
	IsError   wireBool       `json:"is_error"`
	Source    jsontext.Value `json:"source"`
	Title     wireString     `json:"title"`
	Rest      jsontext.Value `json:",embed"`
}

// anthropicSourceIn is an image or document source as read.
type anthropicSourceIn struct {
	Type      wireString     `json:"type"`
	MediaType wireString     `json:"media_type"`
	Data      wireString     `json:"data"`
	URL       wireString     `json:"url"`
	FileID    wireString     `json:"file_id"`
	Rest      jsontext.Value `json:",embed"`
}

// The members of a block, as bits, for faithful.
const (
	wText uint16 = 1 << iota
	wThinking
	wSignature
	wData
	wID
	wName
	wInput
	wToolUseID
	wContent
	wIsError
	wSource
	wTitle
)

func (w *anthropicBlockIn) members() uint16 {
	var m uint16
	for _, x := range []struct {
		bit uint16
		set bool
	}{
		{wText, w.Text.Set},
		{wThinking, w.Thinking.Set},
		{wSignature, w.Signature.Set},
		{wData, w.Data.Set},
		{wID, w.ID.Set},
		{wName, w.Name.Set},
		{wInput, w.Input != nil},
		{wToolUseID, w.ToolUseID.Set},
		{wContent, w.Content != nil},
		{wIsError, w.IsError.Set},
		{wSource, w.Source != nil},
		{wTitle, w.Title.Set},
	} {
		if x.set {
			m |= x.bit
		}
	}
	return m
}

// written is a string member the encoder always writes; omitted one it writes only when not
// empty. Either way a null never comes back.
func written(s wireString) bool { return s.Set && !s.Null }

func omitted(s wireString) bool { return !s.Set || !s.Null && s.V != "" }

// faithful reports whether the encoder writes the block back with exactly the members read
// and the same values: the members its type uses, in the form the encoder writes them.
func (w *anthropicBlockIn) faithful(t BlockType) bool {
	var allowed, required uint16
	var ok bool
	switch t {
	case BlockText:
		allowed, required, ok = wText, wText, written(w.Text)
	case BlockThinking:
		allowed, required, ok = wThinking|wSignature, wThinking|wSignature, written(w.Thinking) && written(w.Signature)
	case BlockRedactedThinking:
		allowed, required, ok = wData, wData, written(w.Data)
	case BlockToolUse:
		allowed, required, ok = wID|wName|wInput, wInput, omitted(w.ID) && omitted(w.Name)
	case BlockToolResult:
		k := w.Content.Kind()
		allowed, required = wToolUseID|wContent|wIsError, wContent
		ok = omitted(w.ToolUseID) && (!w.IsError.Set || w.IsError.V && !w.IsError.Null) && (k == '"' || k == '[')
	case BlockImage, BlockDocument:
		allowed = wSource | wTitle
		ok = omitted(w.Title) && faithfulSource(w.Source)
	default:
		return true // kept whole in Raw
	}
	m := w.members()
	return ok && m&^allowed == 0 && m&required == required
}

func faithfulSource(src jsontext.Value) bool {
	if src == nil {
		return true
	}
	var s anthropicSourceIn
	if src.Kind() != '{' || json.Unmarshal(src, &s, lenientJSON) != nil {
		return false
	}
	return written(s.Type) && s.Type.V != "" && omitted(s.MediaType) && omitted(s.Data) && omitted(s.URL) && omitted(s.FileID)
}

// knownWireNames are the members the encoder writes from the model's fields.
var knownWireNames = map[string]bool{
	"type": true, "text": true, "thinking": true, "signature": true, "data": true, "id": true, "name": true,
	"input": true, "tool_use_id": true, "content": true, "is_error": true, "source": true, "title": true,
}

// keepWireForm keeps what a block had that the encoder would not write back as read. When
// the encoder writes every member the block had, and only those, the members it writes
// otherwise (is_error: false, a null) go to Extra beside the unknown ones, and the encoder
// puts them back while they still say what the model says (see applyOverrides). When the
// encoder would add a member (a text block without text, a tool_use without input) or a
// difference remains, the block is kept whole in Raw, its fields still filled for readers.
func keepWireForm(raw jsontext.Value, b *Block) {
	unknown := b.Extra
	enc, err := blockToAnthropic(b)
	if err != nil {
		b.Raw = raw.Clone()
		return
	}
	var overrides []member
	missing := false
	encNames := map[string]bool{}
	eachMember(enc, func(name string, _ jsontext.Value) { encNames[name] = true })
	have := map[string]bool{}
	eachMember(raw, func(name string, v jsontext.Value) {
		have[name] = true
		if !knownWireNames[name] {
			return
		}
		if ev, ok := memberOf(enc, name); !ok || !equalJSONValues(ev, v) {
			overrides = append(overrides, member{name, v.Clone()})
		}
	})
	for name := range encNames {
		if !have[name] {
			missing = true
		}
	}
	if !missing && len(overrides) > 0 {
		extra := unknown
		if extra.Kind() != '{' {
			extra = jsontext.Value(`{}`)
		}
		if b.Extra, err = replaceMembers(extra, overrides...); err == nil {
			if enc, err = blockToAnthropic(b); err == nil && equalJSONValues(enc, raw) {
				return
			}
		}
	}
	b.Extra = unknown
	if enc, err := blockToAnthropic(b); err != nil || !equalJSONValues(enc, raw) {
		b.Raw = raw.Clone()
	}
}

// splitExtra separates Extra into the members of no block type (written as they are) and the
// known members keepWireForm kept (written only while they agree with the model).
func splitExtra(extra jsontext.Value) (rest jsontext.Value, overrides []member) {
	if extra.Kind() != '{' {
		return extra, nil
	}
	eachMember(extra, func(name string, v jsontext.Value) {
		if knownWireNames[name] {
			overrides = append(overrides, member{name, v.Clone()})
		}
	})
	if len(overrides) == 0 {
		return extra, nil
	}
	rest, err := rewriteObject(extra, func(name string, v jsontext.Value) (jsontext.Value, error) {
		if knownWireNames[name] {
			return nil, nil
		}
		return v, nil
	})
	if err != nil || bytes.Equal(rest, []byte(`{}`)) {
		rest = nil
	}
	return rest, overrides
}

// applyOverrides puts back into an encoded block each kept member that still says what the
// model says: read back with it, the block is the same. A tool result cleared by compaction
// does not get its old "content": null back; "is_error": false stays until it turns true.
func applyOverrides(enc jsontext.Value, b *Block, overrides []member) jsontext.Value {
	for _, m := range overrides {
		cand, err := replaceMembers(enc, m)
		if err != nil {
			continue
		}
		if got, _, err := decodeBlock(cand); err == nil && sameModelBlock(&got, b) {
			enc = cand
		}
	}
	return enc
}

// sameModelBlock compares what the model holds of two blocks (not ids, status or extras).
func sameModelBlock(x, y *Block) bool {
	if x.Type != y.Type || x.Text != y.Text || x.Signature != y.Signature || x.Data != y.Data ||
		x.ToolUseID != y.ToolUseID || x.ToolName != y.ToolName || x.IsError != y.IsError ||
		!bytes.Equal(x.Input, y.Input) || len(x.Content) != len(y.Content) || (x.Content == nil) != (y.Content == nil) {
		return false
	}
	if (x.Media == nil) != (y.Media == nil) || x.Media != nil && *x.Media != *y.Media {
		return false
	}
	for i := range x.Content {
		if !sameModelBlock(&x.Content[i], &y.Content[i]) {
			return false
		}
	}
	return true
}

// eachMember calls f with every member of a JSON object, in order.
func eachMember(obj jsontext.Value, f func(name string, v jsontext.Value)) {
	_, _ = rewriteObject(obj, func(name string, v jsontext.Value) (jsontext.Value, error) {
		f(name, v)
		return v, nil
	})
}

// equalJSONValues reports whether two JSON values are the same value: member order,
// whitespace and string escapes aside (RFC 8785 canonical forms compared). Values that
// cannot be put in canonical form (repeated names) are equal only byte for byte.
func equalJSONValues(a, b jsontext.Value) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ca, cb := a.Clone(), b.Clone()
	if ca.Canonicalize() != nil || cb.Canonicalize() != nil {
		return false
	}
	return bytes.Equal(ca, cb)
}
