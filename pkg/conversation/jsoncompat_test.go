package conversation

import (
	stdjson "encoding/json"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"
)

// TestEncodingJSONCompatible: encoding/json reads and writes the same JSON as the package's
// codec, unknown fields included, for the types callers encode themselves.
func TestEncodingJSONCompatible(t *testing.T) {
	s := sampleState(t)
	s.Adapters = nil
	s.Extra = []byte(`{"futureTop":1}`)
	s.Messages[0].Extra = []byte(`{"futureMessage":true}`)
	s.Subagents[0].Extra = []byte(`{"futureSub":"x"}`)
	v2, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := stdjson.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !equalJSON(t, v1, v2) {
		t.Errorf("encoding/json wrote other JSON:\n%.400s\n%.400s", v1, v2)
	}
	var back State
	if err := stdjson.Unmarshal(v2, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("encoding/json read another state:\n%s", diff)
	}
	oa, err := ToOpenAI(&s)
	if err != nil {
		t.Fatal(err)
	}
	w1, _ := stdjson.Marshal(oa)
	w2, _ := json.Marshal(oa)
	if !equalJSON(t, w1, w2) {
		t.Errorf("OpenAI messages differ:\n%.300s\n%.300s", w1, w2)
	}
	var msgs []OpenAIMessage
	if err := stdjson.Unmarshal([]byte(openAIWire), &msgs); err != nil || len(msgs) != 7 || string(msgs[5].Rest) != `{"refusal":null}` {
		t.Errorf("encoding/json decode of OpenAI messages: %v %+v", err, msgs)
	}
}

// TestStdlibBaselineDecodesTheSnapshot: the benchmark baseline's mirror types read the same
// messages, so the baseline does the same work.
func TestStdlibBaselineDecodesTheSnapshot(t *testing.T) {
	s := sampleState(t)
	s.Adapters = nil
	data, err := MarshalSnapshot(&s, SnapshotMetadata{CreatedAt: snapshotTime})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Payload v1State `json:"payload"`
	}
	if err := stdjson.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Payload.Messages) != len(s.Messages) || len(doc.Payload.Subagents[0].Messages) != len(s.Subagents[0].Messages) {
		t.Fatalf("mirror read %d messages", len(doc.Payload.Messages))
	}
	for i, m := range doc.Payload.Messages {
		if m.ID != s.Messages[i].ID || len(m.Blocks) != len(s.Messages[i].Blocks) || string(m.Source.Raw) != string(s.Messages[i].Source.Raw) {
			t.Errorf("message %d differs", i)
		}
	}
}
