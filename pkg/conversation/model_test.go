package conversation

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func TestTurns(t *testing.T) {
	s := importFixtureSession(t)
	turns := Turns(s.Messages)
	// Three assistant messages: the first calls Skill and Task, the second Write.
	if len(turns) != 3 {
		t.Fatalf("%d turns", len(turns))
	}
	if len(turns[0].ToolResults) != 2 || !turns[0].Complete() || turns[0].Index != 1 {
		t.Errorf("turn 1: %d results, complete %v, index %d", len(turns[0].ToolResults), turns[0].Complete(), turns[0].Index)
	}
	if !turns[1].Complete() || len(turns[2].ToolResults) != 0 || !turns[2].Complete() {
		t.Error("turns 2 and 3 should be complete")
	}
	incomplete := Turns(s.Messages[:2])
	if incomplete[0].Complete() {
		t.Error("a turn whose calls have no results is complete")
	}
	for _, m := range s.Messages {
		if m.Role == RoleAssistant && m.Turn == 0 {
			t.Errorf("assistant message %s has no turn", m.ID)
		}
	}
}

func TestMessageHelpers(t *testing.T) {
	m := Message{Blocks: []Block{
		{Type: BlockThinking, Text: "hidden"},
		{Type: BlockText, Text: "a"},
		{Type: BlockToolUse, ToolUseID: "t1"},
		{Type: BlockText, Text: "b"},
		{Type: BlockToolResult, ToolUseID: "t0"},
	}}
	if m.Text() != "a\nb" {
		t.Errorf("text %q", m.Text())
	}
	if ids := m.ToolUseIDs(); len(ids) != 1 || ids[0] != "t1" || !m.HasToolUse() {
		t.Errorf("tool uses %v", ids)
	}
	if ids := m.ToolResultIDs(); len(ids) != 1 || ids[0] != "t0" || !m.HasToolResult() {
		t.Errorf("tool results %v", ids)
	}
	if (&Message{}).HasToolUse() || (&Message{}).Text() != "" {
		t.Error("empty message")
	}
	u := Usage{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4}
	if u.Total() != 10 || u.IsZero() || !(Usage{}).IsZero() {
		t.Errorf("usage %+v", u)
	}
	f := FlagMeta | FlagSidechain
	if !f.Has(FlagMeta) || f.Has(FlagCompactSummary) || !f.Has(FlagMeta|FlagSidechain) {
		t.Error("flags")
	}
}

func TestToolCallArguments(t *testing.T) {
	// Arguments the model wrote as invalid JSON are kept as written and sent back as written
	// to OpenAI; Anthropic gets an empty object.
	s := NewState("s")
	s.Messages = []Message{{ID: "a", Role: RoleAssistant, Blocks: []Block{{Type: BlockToolUse, ToolUseID: "c1", ToolName: "f", Arguments: `{"x": 1`}}}}
	oa, err := ToOpenAI(&s)
	if err != nil || oa[0].ToolCalls[0].Function.Arguments != `{"x": 1` {
		t.Fatalf("%+v %v", oa, err)
	}
	conv, err := ToAnthropic(&s)
	if err != nil {
		t.Fatal(err)
	}
	var content []struct {
		Input jsontext.Value `json:"input"`
	}
	if err := json.Unmarshal(conv.Messages[0].Content, &content); err != nil || string(content[0].Input) != `{}` {
		t.Errorf("anthropic input %s %v", conv.Messages[0].Content, err)
	}
	s.Messages[0].Blocks[0].Arguments = `{"x":1}`
	conv, _ = ToAnthropic(&s)
	if err := json.Unmarshal(conv.Messages[0].Content, &content); err != nil || string(content[0].Input) != `{"x":1}` {
		t.Errorf("anthropic input from arguments %s", conv.Messages[0].Content)
	}
}

func TestOpenAIImages(t *testing.T) {
	wire := []OpenAIMessage{{Role: "user", Content: []byte(`[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}},{"type":"input_audio","input_audio":{"data":"x"}}]`)}}
	s, err := FromOpenAI(wire)
	if err != nil {
		t.Fatal(err)
	}
	img := s.Messages[0].Blocks[0]
	if img.Media == nil || img.Media.SourceType != "base64" || img.Media.MediaType != "image/png" || img.Media.Data != "iVBO" {
		t.Errorf("image %+v", img.Media)
	}
	if s.Messages[0].Blocks[1].Type != "input_audio" || len(s.Messages[0].Blocks[1].Raw) == 0 {
		t.Errorf("unknown part %+v", s.Messages[0].Blocks[1])
	}
	conv, err := ToAnthropic(&s)
	if err != nil {
		t.Fatal(err)
	}
	var content []map[string]any
	_ = json.Unmarshal(conv.Messages[0].Content, &content)
	if len(content) != 1 {
		t.Errorf("the OpenAI-only audio part went to Anthropic: %s", conv.Messages[0].Content)
	}
	if src, _ := content[0]["source"].(map[string]any); src["type"] != "base64" || src["media_type"] != "image/png" {
		t.Errorf("anthropic image %s", conv.Messages[0].Content)
	}
	back, err := ToOpenAI(&s)
	if err != nil {
		t.Fatal(err)
	}
	if !equalJSON(t, back[0].Content, []byte(`[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}},{"type":"input_audio","input_audio":{"data":"x"}}]`)) {
		t.Errorf("openai image %s", back[0].Content)
	}
}
