package conversation

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The types below carry a ",embed" fallback field (unknown fields kept), which only
// go-json-experiment/json understands. Their JSON methods make encoding/json produce and read
// the same JSON, so callers may use either codec. Each method encodes a method-less copy of the
// type (same fields, same tags), which keeps the codec from calling the method again.

type (
	messageFields       Message
	stateFields         State
	subagentFields      Subagent
	openAIMessageFields OpenAIMessage
)

// MarshalJSON implements encoding/json.Marshaler.
func (m Message) MarshalJSON() ([]byte, error) {
	return json.Marshal((*messageFields)(&m), lenientJSON)
}

// UnmarshalJSON implements encoding/json.Unmarshaler.
func (m *Message) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, (*messageFields)(m), lenientJSON)
}

// MarshalJSONTo implements json.MarshalerTo (the streaming form go-json-experiment prefers).
func (m *Message) MarshalJSONTo(enc *jsontext.Encoder) error {
	return json.MarshalEncode(enc, (*messageFields)(m), lenientJSON)
}

// UnmarshalJSONFrom implements json.UnmarshalerFrom.
func (m *Message) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return json.UnmarshalDecode(dec, (*messageFields)(m), lenientJSON)
}

// MarshalJSON implements encoding/json.Marshaler.
func (s State) MarshalJSON() ([]byte, error) {
	return json.Marshal((*stateFields)(&s), lenientJSON)
}

// UnmarshalJSON implements encoding/json.Unmarshaler.
func (s *State) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, (*stateFields)(s), lenientJSON)
}

// MarshalJSONTo implements json.MarshalerTo.
func (s *State) MarshalJSONTo(enc *jsontext.Encoder) error {
	return json.MarshalEncode(enc, (*stateFields)(s), lenientJSON)
}

// UnmarshalJSONFrom implements json.UnmarshalerFrom.
func (s *State) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return json.UnmarshalDecode(dec, (*stateFields)(s), lenientJSON)
}

// MarshalJSON implements encoding/json.Marshaler.
func (s Subagent) MarshalJSON() ([]byte, error) {
	return json.Marshal((*subagentFields)(&s), lenientJSON)
}

// UnmarshalJSON implements encoding/json.Unmarshaler.
func (s *Subagent) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, (*subagentFields)(s), lenientJSON)
}

// MarshalJSONTo implements json.MarshalerTo.
func (s *Subagent) MarshalJSONTo(enc *jsontext.Encoder) error {
	return json.MarshalEncode(enc, (*subagentFields)(s), lenientJSON)
}

// UnmarshalJSONFrom implements json.UnmarshalerFrom.
func (s *Subagent) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return json.UnmarshalDecode(dec, (*subagentFields)(s), lenientJSON)
}

// MarshalJSON implements encoding/json.Marshaler.
func (m OpenAIMessage) MarshalJSON() ([]byte, error) {
	return json.Marshal((*openAIMessageFields)(&m), lenientJSON)
}

// UnmarshalJSON implements encoding/json.Unmarshaler.
func (m *OpenAIMessage) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, (*openAIMessageFields)(m), lenientJSON)
}

// MarshalJSONTo implements json.MarshalerTo.
func (m *OpenAIMessage) MarshalJSONTo(enc *jsontext.Encoder) error {
	return json.MarshalEncode(enc, (*openAIMessageFields)(m), lenientJSON)
}

// UnmarshalJSONFrom implements json.UnmarshalerFrom.
func (m *OpenAIMessage) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return json.UnmarshalDecode(dec, (*openAIMessageFields)(m), lenientJSON)
}
