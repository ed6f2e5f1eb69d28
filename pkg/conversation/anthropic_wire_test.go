package conversation

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// A block read in a form the encoder does not write keeps the difference, small, in Extra
// (or whole in Raw when the encoder would add a member), comes back as read, and still
// follows the model when the model changes.
func TestBlockWireForm(t *testing.T) {
	cases := []struct {
		name, in string
		// extra is what Extra holds (empty: nothing); raw says the block is kept whole.
		extra string
		raw   bool
		// edit changes the model; edited is the block written after it.
		edit   func(*Block)
		edited string
	}{
		{
			name: "is_error false", in: `{"type":"tool_result","tool_use_id":"t","content":"x","is_error":false}`,
			extra: `{"is_error":false}`,
			edit:  func(b *Block) { b.IsError = true }, edited: `{"type":"tool_result","tool_use_id":"t","content":"x","is_error":true}`,
		},
		{
			name: "null content", in: `{"type":"tool_result","tool_use_id":"t","content":null}`,
			extra: `{"content":null}`,
			edit:  func(b *Block) { b.Text = "[cleared]" }, edited: `{"type":"tool_result","tool_use_id":"t","content":"[cleared]"}`,
		},
		{
			name: "empty id", in: `{"type":"tool_use","id":"","name":"n","input":{}}`,
			extra: `{"id":""}`,
			edit:  func(b *Block) { b.ToolUseID = "t2" }, edited: `{"type":"tool_use","id":"t2","name":"n","input":{}}`,
		},
		{
			name: "member of another type", in: `{"type":"text","text":"a","title":"t","cache_control":{"type":"ephemeral"}}`,
			extra: `{"cache_control":{"type":"ephemeral"},"title":"t"}`,
			edit:  func(b *Block) { b.Text = "b" }, edited: `{"type":"text","text":"b","title":"t","cache_control":{"type":"ephemeral"}}`,
		},
		{name: "no content", in: `{"type":"tool_result","tool_use_id":"t"}`, raw: true},
		{name: "no text", in: `{"type":"text"}`, raw: true},
		{name: "as written", in: `{"type":"tool_result","tool_use_id":"t","content":"x","is_error":true}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := blockFromAnthropic(jsontext.Value(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if (len(b.Raw) > 0) != c.raw {
				t.Errorf("raw %s", b.Raw)
			}
			if !c.raw && !sameJSON(b.Extra, []byte(c.extra)) {
				t.Errorf("extra %s, want %s", b.Extra, c.extra)
			}
			out, err := blockToAnthropic(&b)
			if err != nil || !sameJSON(out, []byte(c.in)) {
				t.Errorf("written %s, %v; read %s", out, err, c.in)
			}
			if c.edit == nil {
				return
			}
			c.edit(&b)
			if out, err := blockToAnthropic(&b); err != nil || !sameJSON(out, []byte(c.edited)) {
				t.Errorf("after the edit %s, %v; want %s", out, err, c.edited)
			}
		})
	}
}
