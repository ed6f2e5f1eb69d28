package render

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

// jsonText is a JSON text as an exporter writes it: strings hold the disguising code points
// raw (encoders escape only the C0 controls), tokens are separated by JSON whitespace.
const jsonText = "{\"text\": \"ok\u009b31m\u202eevil\u200f\u061c\u2028\u2029\u0085\x7fend\",\r\n\t\"n\": [1, \"\u00e9\u4e2d\U0001F600\"]}\n" +
	"{\"escaped\":\"\\u001b\\n\"}\n"

func TestJSONEscapesWhatDisguisesAndKeepsTheData(t *testing.T) {
	got := JSON([]byte(jsonText))
	want := "{\"text\": \"ok\\u009b31m\\u202eevil\\u200f\\u061c\\u2028\\u2029\\u0085\\u007fend\",\r\n\t\"n\": [1, \"\u00e9\u4e2d\U0001F600\"]}\n" +
		"{\"escaped\":\"\\u001b\\n\"}\n"
	if string(got) != want {
		t.Fatalf("JSON:\n got %q\nwant %q", got, want)
	}
	if !reflect.DeepEqual(decodeAll(t, []byte(jsonText)), decodeAll(t, got)) {
		t.Fatal("the escaped text holds other data")
	}
}

func TestJSONWritesInvalidBytesAsTheReplacementCharacter(t *testing.T) {
	got := JSON([]byte("{\"a\":\"x\xff\x9by\"}"))
	if string(got) != `{"a":"x\ufffd\ufffdy"}` {
		t.Fatalf("got %q", got)
	}
}

func TestJSONLeavesSafeTextAlone(t *testing.T) {
	in := []byte("{\"a\":\"plain \u00e9 \U0001F600\"}\n")
	if got := JSON(in); &got[0] != &in[0] {
		t.Fatalf("a text with nothing to escape was copied: %q", got)
	}
}

// Printable and JSON replace the same code points: what history shows as a stand-in, export
// writes as an escape.
func TestPrintableReplacesWhatJSONEscapes(t *testing.T) {
	for _, r := range []rune{0x1b, 0x7f, 0x85, 0x9b, 0x61c, 0x200e, 0x200f, 0x202a, 0x202e, 0x2028, 0x2029, 0x2066, 0x2069} {
		s := "a" + string(r) + "b"
		if Printable(s) == s {
			t.Errorf("Printable leaves U+%04X", r)
		}
		if got := JSON([]byte(`"` + s + `"`)); bytes.ContainsRune(got, r) {
			t.Errorf("JSON leaves U+%04X", r)
		}
	}
}

// Whatever valid JSON goes in, what comes out is valid JSON holding the same data, with no
// code point that disguises but JSON whitespace.
func FuzzJSON(f *testing.F) {
	f.Add([]byte(jsonText))
	f.Add([]byte(`"\u2028"`))
	f.Add([]byte("[\"\xe2\x80\xae\", {\"\u0085\": null}]"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var want any
		if json.Unmarshal(in, &want) != nil || !utf8.Valid(in) {
			return
		}
		out := JSON(in)
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("JSON(%q) = %q, not JSON: %v", in, out, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("JSON(%q) = %q holds other data", in, out)
		}
		for _, r := range string(out) {
			if disguises(r) && r != ' ' && r != '\t' && r != '\n' && r != '\r' {
				t.Fatalf("JSON(%q) = %q holds U+%04X", in, out, r)
			}
		}
	})
}

func decodeAll(t *testing.T, b []byte) []any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	var out []any
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}
