package conversation

import (
	"testing"

	"github.com/go-json-experiment/json"
)

func TestStripContent(t *testing.T) {
	cases := map[string]string{
		`{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u"}`:           `{"type":"user","message":{"role":"user"},"uuid":"u"}`,
		`{"message":{"content":[{"type":"text"}] , "role":"user"}}`:                     `{"message":{ "role":"user"}}`,
		`{"message":{"content":"only"}}`:                                                `{"message":{}}`,
		`{"message":{"role":"user", "content" : {"a":[1,{"content":2}]} ,"id":"x"}}`:    `{"message":{"role":"user" ,"id":"x"}}`,
		`{"content":"top level is not message content","message":{"role":"assistant"}}`: `{"content":"top level is not message content","message":{"role":"assistant"}}`,
		`{"message":"not an object"}`:                                                   `{"message":"not an object"}`,
	}
	for in, want := range cases {
		got, err := stripContent([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", in, got, want)
		}
		if !got.IsValid() {
			t.Errorf("%s: result is not valid JSON", in)
		}
	}
	if _, err := stripContent([]byte(`{"message":{"content":`)); err == nil {
		t.Error("truncated line accepted")
	}
}

func TestReplaceMembers(t *testing.T) {
	got, err := replaceMembers([]byte(`{"a":1,"b":2}`), member{"b", []byte(`3`)}, member{"c", []byte(`4`)}, member{"a", nil})
	if err != nil || string(got) != `{"b":3,"c":4}` {
		t.Errorf("got %s, %v", got, err)
	}
	if _, err := replaceMembers([]byte(`[1]`)); err == nil {
		t.Error("array accepted")
	}
}

func TestEncodeLineRecordsMatchesMarshal(t *testing.T) {
	recs := []claudeLineRecord{
		{Line: []byte(`{"type":"user","uuid":"u"}`), Blocks: 1, StringContent: true},
		{Line: []byte(`{"type":"assistant"}`), Blocks: 2},
	}
	want, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	if got := encodeLineRecords(recs); string(got) != string(want) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
