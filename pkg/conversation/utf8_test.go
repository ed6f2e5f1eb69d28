package conversation

import (
	stdjson "encoding/json"
	"errors"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

// checkpointed is s after a snapshot round trip.
func checkpointed(t *testing.T, s *State) State {
	t.Helper()
	data, err := MarshalSnapshot(s, SnapshotMetadata{CreatedAt: snapshotTime})
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	return back.State
}

// validUTF8 replaces invalid bytes as the encoder does: a value it made valid comes back from
// a snapshot as it is.
func TestValidUTF8IsWhatTheEncoderWrites(t *testing.T) {
	for _, bad := range []string{"\xb4", "\xe1\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\x80", "a\xf0\x9f\x98b\xff"} {
		raw := jsontext.Value(`{"k` + bad + `":["` + bad + `"]}`)
		written, err := json.Marshal(raw, lenientJSON)
		if err != nil {
			t.Fatal(err)
		}
		if got := validUTF8(raw); string(got) != string(written) {
			t.Errorf("%q: validUTF8 %q, the encoder writes %q", bad, got, written)
		}
		var text string
		if err := json.Unmarshal([]byte(`"`+bad+`"`), &text, lenientJSON); err != nil || text != string(validUTF8([]byte(bad))) {
			t.Errorf("%q: decoded string %q, validUTF8 %q", bad, text, validUTF8([]byte(bad)))
		}
	}
	if in := []byte(`{"k":"é"}`); &validUTF8(in)[0] != &in[0] {
		t.Error("valid data was copied")
	}
}

// Importers read foreign input leniently; a byte that is not UTF-8 in a member they keep raw
// (an unknown member, a tool input, a line kept whole, a block's extras) used to be held as
// read, and a checkpoint of the state gave it back as U+FFFD.
func TestImportersKeepRawValuesUTF8(t *testing.T) {
	readAnthropic := func(data string) (State, error) {
		var conv AnthropicConversation
		if err := json.Unmarshal([]byte(data), &conv, lenientJSON); err != nil {
			return State{}, err
		}
		return FromAnthropic(conv)
	}
	readOpenAI := func(data string) (State, error) {
		var msgs []OpenAIMessage
		if err := json.Unmarshal([]byte(data), &msgs, lenientJSON); err != nil {
			return State{}, err
		}
		return FromOpenAI(msgs)
	}
	readStream := func(data string) (State, error) {
		events, err := NewClaudeStream().Events([]byte(data))
		if err != nil {
			return State{}, err
		}
		s := NewState("s")
		for _, e := range events {
			if err := s.Apply(e); err != nil {
				return s, err
			}
		}
		return s, nil
	}
	readClaude := func(d string) (State, error) { return ImportClaudeJSONL([]byte(d)) }
	for name, c := range map[string]struct {
		read func(string) (State, error)
		in   string
	}{
		"claude unknown member":  {readClaude, "{\"type\":\"user\",\"uuid\":\"u\",\"x\xb4\":\"\xe1\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}"},
		"claude record":          {readClaude, "{\"type\":\"queue-operation\",\"op\":\"\xb4\"}"},
		"claude block extras":    {readClaude, "{\"type\":\"assistant\",\"uuid\":\"u\",\"message\":{\"id\":\"m\",\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{\"\xb4\":1},\"cache_control\":{\"k\":\"\xb4\"}}]}}"},
		"opencode tool input":    {func(d string) (State, error) { return ImportOpenCode([]byte(d)) }, "{\"info\":{\"id\":\"s\"},\"messages\":[{\"info\":{\"id\":\"m\",\"role\":\"assistant\"},\"parts\":[{\"id\":\"p\",\"type\":\"tool\",\"callID\":\"c\",\"tool\":\"bash\",\"state\":{\"status\":\"running\",\"input\":{\"\xb4k\":\"v\"}}}]}]}"},
		"sdk stream block":       {readStream, "{\"type\":\"assistant\",\"uuid\":\"u\",\"message\":{\"id\":\"m\",\"role\":\"assistant\",\"content\":[{\"type\":\"mystery\",\"k\":\"\xb4\"}]}}"},
		"anthropic block extras": {readAnthropic, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\",\"cache_control\":{\"\xb4\":\"e\"}}]}]}"},
		"openai unknown member":  {readOpenAI, "[{\"role\":\"user\",\"content\":\"hi\",\"x\":\"\xb4\"}]"},
	} {
		s, err := c.read(c.in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if diff := cmp.Diff(s, checkpointed(t, &s)); diff != "" {
			t.Errorf("%s: changed in a checkpoint (-imported +decoded):\n%s", name, diff)
		}
	}
}

// Parley's own formats refuse raw JSON that is not UTF-8: the Session API's messages, events
// and imports (decoded by encoding/json, which hands raw bytes to the model as they came),
// and DecodeEvent.
func TestInvalidUTF8RawIsRefused(t *testing.T) {
	msg := "{\"id\":\"m\",\"role\":\"user\",\"blocks\":[{\"type\":\"tool_use\",\"toolUseId\":\"t\",\"input\":{\"k\":\"\xb4\"}}]}"
	var m Message
	if err := stdjson.Unmarshal([]byte(msg), &m); err != nil {
		t.Fatal(err)
	}
	s := NewState("s")
	if _, err := s.AppendMessage(m); !errors.Is(err, ErrInvalid) {
		t.Errorf("AppendMessage: %v, want ErrInvalid", err)
	}
	for name, st := range map[string]State{
		"message":  {SchemaVersion: SchemaVersion, Messages: []Message{m}},
		"system":   {SchemaVersion: SchemaVersion, System: &Message{ID: "s", Role: RoleSystem, Extra: jsontext.Value("{\"x\":\"\xb4\"}")}},
		"record":   {SchemaVersion: SchemaVersion, Records: []RawRecord{{Raw: jsontext.Value("{\"\xb4\":1}")}}},
		"subagent": {SchemaVersion: SchemaVersion, Subagents: []Subagent{{ToolUseID: "t", Extra: jsontext.Value("{\"x\":\"\xb4\"}")}}},
		"source":   {SchemaVersion: SchemaVersion, Source: Source{Raw: jsontext.Value("\"\xb4\"")}},
	} {
		if err := st.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate: %v, want ErrInvalid", name, err)
		}
	}
	for _, in := range []string{
		"{\"type\":\"block:upsert\",\"message\":{\"id\":\"m\",\"x\xb4\":1}}",
		"{\"type\":\"block:upsert\",\"message\":{\"id\":\"m\"},\"block\":{\"type\":\"x\",\"raw\":{\"k\":\"\xb4\"}}}",
		"{\"type\":\"block:delta\",\"blockId\":\"b\",\"delta\":\"\xb4\"}",
	} {
		if _, err := DecodeEvent([]byte(in)); !errors.Is(err, ErrEvent) {
			t.Errorf("DecodeEvent %q: %v, want ErrEvent", in, err)
		}
		var e Event
		if err := stdjson.Unmarshal([]byte(in), &e); err != nil {
			t.Fatal(err)
		}
		if err := e.Validate(); e.Type == EventBlockUpsert && !errors.Is(err, ErrEvent) {
			t.Errorf("Validate %q: %v, want ErrEvent", in, err)
		}
	}
}
