package conversation

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func TestStripContent(t *testing.T) {
	cases := map[string]string{
		`{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u"}`:             `{"type":"user","message":{"role":"user"},"uuid":"u"}`,
		`{"message":{"content":[{"type":"text"}] , "role":"user"}}`:                       `{"message":{ "role":"user"}}`,
		`{"message":{"content":"only"}}`:                                                  `{"message":{}}`,
		`{"message":{"role":"user", "content" : {"a":[1,{"content":2}]} ,"id":"x"}}`:      `{"message":{"role":"user" ,"id":"x"}}`,
		`{"content":"top level is not message content","message":{"role":"assistant"}}`:   `{"content":"top level is not message content","message":{"role":"assistant"}}`,
		`{"message":"not an object"}`:                                                     `{"message":"not an object"}`,
		`{"message":{"content":[1],"role":"user","content":"x"},"message":{"content":2}}`: `{"message":{"role":"user"},"message":{}}`,
	}
	for in, want := range cases {
		got, err := stripContent([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", in, got, want)
		}
		if !got.IsValid(jsontext.AllowDuplicateNames(true)) {
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
	prevUUID := "u\"1"
	recs := []claudeLineRecord{
		{Line: []byte(`{"type":"user","uuid":"u"}`), Blocks: 1, StringContent: true},
		{Line: []byte(`{"type":"assistant"}`), Blocks: 2},
		{Line: []byte(`{"type":"user","message":{"content":null}}`), KeepContent: true, Order: []int{1, 0}, Prev: new(string)},
		{Line: []byte(`{}`), Blocks: 1, Prev: &prevUUID},
	}
	want, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	if got := encodeLineRecords(recs); string(got) != string(want) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestEditPaths(t *testing.T) {
	cases := []struct {
		in    string
		edits []pathEdit
		want  string
	}{
		{`{"a":1,"s":{"x":1,"y":2}}`, []pathEdit{{[]string{"s", "x"}, []byte(`5`)}, {[]string{"a"}, nil}}, `{"s":{"x":5,"y":2}}`},
		{`{"a":1}`, []pathEdit{{[]string{"s", "t", "u"}, []byte(`"v"`)}}, `{"a":1,"s":{"t":{"u":"v"}}}`},
		{`{"a":1}`, []pathEdit{{[]string{"s", "x"}, nil}}, `{"a":1}`},
		{`{"s":7}`, []pathEdit{{[]string{"s", "x"}, []byte(`1`)}}, `{"s":{"x":1}}`},
		{`{"s":{"x":1},"s":{"y":2}}`, []pathEdit{{[]string{"s", "z"}, []byte(`3`)}}, `{"s":{"y":2,"z":3},"s":{"y":2,"z":3}}`},
		{`{"a":1}`, nil, `{"a":1}`},
	}
	for _, c := range cases {
		got, err := editPaths([]byte(c.in), c.edits...)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: got %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if v, ok := memberOf([]byte(`{"a":1,"a":2}`), "a"); !ok || string(v) != "2" {
		t.Errorf("memberOf: %s %v", v, ok)
	}
}
