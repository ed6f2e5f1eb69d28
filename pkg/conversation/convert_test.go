package conversation

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"
)

const openAIWire = `[
 {"role":"system","content":"You are terse."},
 {"role":"user","content":"List files and read README."},
 {"role":"assistant","content":null,"tool_calls":[
   {"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"path\": \".\"}"}},
   {"id":"call_2","type":"function","function":{"name":"read","arguments":"{\"file\":\"README\"}"}}]},
 {"role":"tool","tool_call_id":"call_1","content":"README\nmain.go"},
 {"role":"tool","tool_call_id":"call_2","content":"# Parley"},
 {"role":"assistant","content":"Two files; README says Parley.","refusal":null},
 {"role":"user","name":"ana","content":[{"type":"text","text":"and this?"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}
]`

func TestOpenAIRoundTrip(t *testing.T) {
	var wire []OpenAIMessage
	if err := json.Unmarshal([]byte(openAIWire), &wire); err != nil {
		t.Fatal(err)
	}
	s, err := FromOpenAI(wire)
	if err != nil {
		t.Fatal(err)
	}
	if s.System == nil || s.System.Text() != "You are terse." {
		t.Errorf("system %+v", s.System)
	}
	if len(s.Messages) != 5 {
		t.Fatalf("%d messages, want 5 (the two tool messages merge)", len(s.Messages))
	}
	results := s.Messages[2]
	if results.Role != RoleTool || len(results.ToolResultIDs()) != 2 {
		t.Errorf("merged tool results: %+v", results)
	}
	call := s.Messages[1].Blocks[0]
	if call.Arguments != `{"path": "."}` || string(call.Input) != `{"path": "."}` {
		t.Errorf("arguments not kept exactly: %q / %s", call.Arguments, call.Input)
	}
	back, err := ToOpenAI(&s)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(back)
	if !equalJSON(t, []byte(openAIWire), got) {
		t.Errorf("round trip differs:\n got %s\nwant %s", got, openAIWire)
	}
}

const anthropicWire = `{
 "system":[{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}],
 "messages":[
  {"role":"user","content":[{"type":"text","text":"Check both hosts."}]},
  {"role":"assistant","content":[
    {"type":"thinking","thinking":"Two pings.","signature":"sig=="},
    {"type":"redacted_thinking","data":"opaque"},
    {"type":"tool_use","id":"toolu_a","name":"ping","input":{"host":"a"}},
    {"type":"tool_use","id":"toolu_b","name":"ping","input":{"host":"b"}}]},
  {"role":"user","content":[
    {"type":"tool_result","tool_use_id":"toolu_a","content":"up"},
    {"type":"tool_result","tool_use_id":"toolu_b","content":[{"type":"text","text":"down"}],"is_error":true},
    {"type":"text","text":"hurry"}]},
  {"role":"assistant","content":[{"type":"text","text":"b is down.","citations":[]},{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{}}]},
  {"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/x.png"}},{"type":"document","source":{"type":"file","file_id":"file_1"},"title":"log"}]}
 ]}`

func TestAnthropicRoundTrip(t *testing.T) {
	var conv AnthropicConversation
	if err := json.Unmarshal([]byte(anthropicWire), &conv); err != nil {
		t.Fatal(err)
	}
	s, err := FromAnthropic(conv)
	if err != nil {
		t.Fatal(err)
	}
	if s.Messages[2].Role != RoleTool || len(s.Messages[2].ToolResultIDs()) != 2 {
		t.Errorf("tool results: %+v", s.Messages[2])
	}
	if b := s.Messages[1].Blocks[0]; b.Type != BlockThinking || b.Text != "Two pings." || b.Signature != "sig==" {
		t.Errorf("thinking %+v", b)
	}
	if b := s.Messages[3].Blocks[1]; b.Type != "server_tool_use" || len(b.Raw) == 0 {
		t.Errorf("unknown block not kept raw: %+v", b)
	}
	back, err := ToAnthropic(&s)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(back)
	if !equalJSON(t, []byte(anthropicWire), got) {
		t.Errorf("round trip differs:\n got %s\nwant %s", got, anthropicWire)
	}
}

// TestOpenAIToolResultsSplitAndMerge takes Anthropic's one user message with several tool
// results to OpenAI (one role:tool message per call, the user text after them) and back.
func TestOpenAIToolResultsSplitAndMerge(t *testing.T) {
	var conv AnthropicConversation
	if err := json.Unmarshal([]byte(anthropicWire), &conv); err != nil {
		t.Fatal(err)
	}
	s, err := FromAnthropic(conv)
	if err != nil {
		t.Fatal(err)
	}
	oa, err := ToOpenAI(&s)
	if err != nil {
		t.Fatal(err)
	}
	roles := make([]string, 0, len(oa))
	for _, m := range oa {
		roles = append(roles, m.Role)
	}
	want := []string{"system", "user", "assistant", "tool", "tool", "user", "assistant", "user"}
	if diff := cmp.Diff(want, roles); diff != "" {
		t.Fatalf("roles (-want +got):\n%s", diff)
	}
	if oa[3].ToolCallID != "toolu_a" || oa[4].ToolCallID != "toolu_b" || string(oa[4].Content) != `"down"` {
		t.Errorf("tool messages: %+v %+v", oa[3], oa[4])
	}
	if len(oa[2].ToolCalls) != 2 || oa[2].ToolCalls[0].Function.Arguments != `{"host":"a"}` {
		t.Errorf("tool calls: %+v", oa[2].ToolCalls)
	}
	// Back from OpenAI, then to Anthropic: the results are in one user message again.
	s2, err := FromOpenAI(oa)
	if err != nil {
		t.Fatal(err)
	}
	conv2, err := ToAnthropic(&s2)
	if err != nil {
		t.Fatal(err)
	}
	var content []map[string]any
	if err := json.Unmarshal(conv2.Messages[2].Content, &content); err != nil {
		t.Fatal(err)
	}
	if len(content) != 3 || content[0]["type"] != "tool_result" || content[1]["type"] != "tool_result" || content[2]["type"] != "text" {
		t.Errorf("merged user message: %s", conv2.Messages[2].Content)
	}
}

// TestConvertFixtureState renders the imported Claude fixture for both APIs.
func TestConvertFixtureState(t *testing.T) {
	s := importFixtureSession(t)
	conv, err := ToAnthropic(&s)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(conv.Messages); i++ {
		if conv.Messages[i].Role == conv.Messages[i-1].Role {
			t.Errorf("messages %d and %d share role %s", i-1, i, conv.Messages[i].Role)
		}
	}
	back, err := FromAnthropic(conv)
	if err != nil {
		t.Fatal(err)
	}
	var toolUses, results int
	for _, m := range back.Messages {
		toolUses += len(m.ToolUseIDs())
		results += len(m.ToolResultIDs())
	}
	if toolUses != 3 || results != 3 {
		t.Errorf("tool uses %d, results %d after the Anthropic round trip", toolUses, results)
	}
	oa, err := ToOpenAI(&s)
	if err != nil {
		t.Fatal(err)
	}
	tools := 0
	for _, m := range oa {
		if m.Role == "tool" {
			tools++
		}
	}
	if tools != 3 {
		t.Errorf("%d role:tool messages, want 3", tools)
	}
	// And the OpenAI form comes back as a Claude transcript the SDK can read.
	fromOA, err := FromOpenAI(oa)
	if err != nil {
		t.Fatal(err)
	}
	fromOA.SessionID, fromOA.CWD = "11111111-2222-3333-4444-555555555555", "/work"
	files, err := ExportClaude(&fromOA, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := ImportClaudeJSONL(files[0].Content)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Messages) != len(fromOA.Messages) {
		t.Fatalf("%d messages after export, want %d", len(again.Messages), len(fromOA.Messages))
	}
	for i := range again.Messages {
		if again.Messages[i].Role != fromOA.Messages[i].Role || again.Messages[i].Text() != fromOA.Messages[i].Text() {
			t.Errorf("message %d: %s %q, want %s %q", i, again.Messages[i].Role, again.Messages[i].Text(), fromOA.Messages[i].Role, fromOA.Messages[i].Text())
		}
	}
}

func TestConvertErrors(t *testing.T) {
	if _, err := FromOpenAI([]OpenAIMessage{{Role: "robot", Content: []byte(`"x"`)}}); err == nil {
		t.Error("unknown OpenAI role accepted")
	}
	if _, err := FromOpenAI([]OpenAIMessage{{Role: "user", Content: []byte(`7`)}}); err == nil {
		t.Error("numeric OpenAI content accepted")
	}
	if _, err := FromAnthropic(AnthropicConversation{Messages: []AnthropicMessage{{Role: "robot", Content: []byte(`"x"`)}}}); err == nil {
		t.Error("unknown Anthropic role accepted")
	}
	if _, err := FromAnthropic(AnthropicConversation{Messages: []AnthropicMessage{{Role: "user", Content: []byte(`[1]`)}}}); err == nil {
		t.Error("non-object Anthropic block accepted")
	}
	// Found by the fuzz targets: each read into a state Validate refuses, or lost a block.
	for _, content := range []string{`[{"text":"x"}]`, `[{"type":"tool_result","tool_use_id":"t"}]`, `[{"type":"image_url","image_url":{}}]`} {
		if _, err := FromOpenAI([]OpenAIMessage{{Role: "user", Content: []byte(content)}}); err == nil {
			t.Errorf("OpenAI content %s accepted", content)
		}
	}
	for _, content := range []string{`[{}]`, `[{"type":"tool_result","tool_use_id":"t"}]`} {
		if _, err := FromAnthropic(AnthropicConversation{Messages: []AnthropicMessage{{Role: "assistant", Content: []byte(content)}}}); err == nil {
			t.Errorf("Anthropic assistant content %s accepted", content)
		}
	}
}

// A message with nothing to send must not split the turn of one role around it in two: the
// wire form would change on the next round trip (FuzzFromAnthropic).
func TestToAnthropicSkipsEmptyMessages(t *testing.T) {
	s := NewState("s")
	s.Messages = []Message{
		{ID: "a", Seq: 1, Role: RoleAssistant, Blocks: []Block{{Type: BlockText, Text: "one"}}},
		{ID: "u", Seq: 2, Role: RoleUser},
		{ID: "b", Seq: 3, Role: RoleAssistant, Blocks: []Block{{Type: BlockText, Text: "two"}}},
	}
	conv, err := ToAnthropic(&s)
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.Messages) != 1 || conv.Messages[0].Role != "assistant" {
		t.Fatalf("got %+v, want one assistant message", conv.Messages)
	}
}

// wireFixpoint checks what the fuzz targets of the converters promise: a state read from a
// provider's wire form keeps the model's invariants, and its wire form is a fixed point —
// rendering it, reading that back and rendering again gives the same JSON. render and read
// convert in each direction.
func wireFixpoint[W any](t *testing.T, s State, render func(*State) (W, error), read func(W) (State, error)) {
	t.Helper()
	if err := s.Validate(); err != nil {
		t.Fatalf("read state breaks an invariant: %v", err)
	}
	w1, err := render(&s)
	if err != nil {
		t.Fatalf("read state does not render: %v", err)
	}
	s2, err := read(w1)
	if err != nil {
		t.Fatalf("rendered wire form does not read back: %v", err)
	}
	w2, err := render(&s2)
	if err != nil {
		t.Fatalf("second render: %v", err)
	}
	j1, _ := json.Marshal(w1, lenientJSON, json.Deterministic(true))
	j2, _ := json.Marshal(w2, lenientJSON, json.Deterministic(true))
	if !bytes.Equal(j1, j2) {
		t.Fatalf("wire form is not stable:\n first %s\nsecond %s", j1, j2)
	}
}

func FuzzFromOpenAI(f *testing.F) {
	f.Add([]byte(openAIWire))
	f.Add([]byte(`[{"role":"developer","content":[{"type":"text","text":"a"}]},{"role":"tool","tool_call_id":"c","content":null},{"role":"tool","content":"x"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var wire []OpenAIMessage
		if json.Unmarshal(data, &wire, lenientJSON) != nil {
			return
		}
		s, err := FromOpenAI(wire)
		if err != nil {
			return
		}
		wireFixpoint(t, s, ToOpenAI, FromOpenAI)
	})
}

func FuzzFromAnthropic(f *testing.F) {
	f.Add([]byte(anthropicWire))
	f.Add([]byte(`{"system":"terse","messages":[{"role":"user","content":"hi"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}]}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var conv AnthropicConversation
		if json.Unmarshal(data, &conv, lenientJSON) != nil {
			return
		}
		s, err := FromAnthropic(conv)
		if err != nil {
			return
		}
		wireFixpoint(t, s, ToAnthropic, FromAnthropic)
	})
}
