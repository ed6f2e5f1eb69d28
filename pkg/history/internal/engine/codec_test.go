package engine

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
)

// testLimit is the read limit of the S3 backend's objects.
var testLimit = ReadLimit(64 << 20)

func TestCodecRoundTrip(t *testing.T) {
	entries := []history.Entry{
		{Seq: 7, ID: "json", Data: []byte(`{"role":"user","content":"hi"}`)},
		{Seq: 8, ID: "pretty json keeps its bytes", Data: []byte("{\n  \"a\": 1\n}")},
		{Seq: 9, ID: "binary", Data: []byte{0, 0xff, '\n', '"'}},
		{Seq: 10, ID: `quotes " and <html>`, Data: []byte(`"a string"`)},
		{Seq: 11, ID: "empty", Data: []byte{}},
		{Seq: 12, ID: "json with spaces", Data: []byte(`{ "a" : [1, 2] }`)},
	}
	for _, list := range [][]history.Entry{entries, nil} { // and an object of no entries
		got, err := decodeEntries(encodeEntries(list), testLimit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(list) {
			t.Fatalf("%d entries, want %d", len(got), len(list))
		}
		for i := range list {
			if got[i].Seq != list[i].Seq || got[i].ID != list[i].ID || !bytes.Equal(got[i].Data, list[i].Data) {
				t.Errorf("entry %d: got %+v, want %+v", i, got[i], list[i])
			}
		}
	}
}

// Data that is one line of JSON, with no whitespace around it, is stored verbatim so that
// objects stay readable with kubectl or an S3 browser; anything else is base64 (a decoder
// would drop the whitespace, or could not embed the bytes). Either way it comes back as is.
func TestCodecKeepsJSONReadable(t *testing.T) {
	tests := map[string]struct {
		data     string
		verbatim bool
	}{
		"an object":                 {`{"role":"user","content":"hi"}`, true},
		"a string":                  {`"hi"`, true},
		"a number":                  {`42`, true},
		"a leading space":           {` {"a":1}`, false},
		"a trailing tab":            {"{\"a\":1}\t", false},
		"a leading carriage return": {"\r{}", false},
		"a trailing newline":        {"{}\n", false},
		"a newline inside":          {"[1,\n2]", false},
		"not JSON":                  {"hello", false},
		"invalid UTF-8":             {"\"\xff\"", false},
		"empty":                     {"", false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			e := history.Entry{Seq: 1, ID: "m", Data: []byte(tt.data)}
			line := encodeLine(e)
			if got := bytes.Contains(line, []byte(`,"j":`+tt.data+`}`)); got != tt.verbatim {
				t.Fatalf("line %s: verbatim %v, want %v", line, got, tt.verbatim)
			}
			got, err := decodeEntries(encodeEntries([]history.Entry{e}), testLimit)
			if err != nil || len(got) != 1 || string(got[0].Data) != tt.data {
				t.Fatalf("round trip: %+v, %v", got, err)
			}
		})
	}
}

// TestCodecDetectsEveryFlippedByte flips each byte of an encoded object in
// turn: every single change must be reported as corruption.
func TestCodecDetectsEveryFlippedByte(t *testing.T) {
	data := encodeEntries([]history.Entry{
		{Seq: 1, ID: "a", Data: []byte(`{"x":1}`)},
		{Seq: 2, ID: "b", Data: []byte{1, 2, 3}},
	})
	for i := range data {
		corrupt := bytes.Clone(data)
		corrupt[i] ^= 0x01
		if _, err := decodeEntries(corrupt, testLimit); !errors.Is(err, history.ErrCorrupt) {
			t.Fatalf("flipped byte %d (%q): %v, want ErrCorrupt", i, data[i], err)
		}
	}
	if _, err := decodeEntries(data[:len(data)/2], testLimit); !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("truncated object: %v, want ErrCorrupt", err)
	}
}

func FuzzCodec(f *testing.F) {
	f.Add("id", []byte(`{"a":1}`))
	// An id JSON must escape, and data that is not JSON (base64).
	f.Add("line\nbreak \"quoted\" <é>", []byte{0xff, '\n'})
	f.Fuzz(func(t *testing.T, id string, data []byte) {
		if checkID(id) != nil {
			t.Skip("Append refuses this id")
		}
		in := []history.Entry{{Seq: 1, ID: id, Data: data}, {Seq: 2, ID: id + "2", Data: data}}
		out, err := decodeEntries(encodeEntries(in), testLimit)
		if err != nil {
			t.Fatal(err)
		}
		for i := range in {
			if out[i].ID != in[i].ID || !bytes.Equal(out[i].Data, in[i].Data) || out[i].Seq != in[i].Seq {
				t.Fatalf("entry %d: got %+v, want %+v", i, out[i], in[i])
			}
		}
	})
}

func TestCompressedSegment(t *testing.T) {
	entries := []history.Entry{{Seq: 1, ID: "a", Data: bytes.Repeat([]byte(`{"x":1}`), 1)}, {Seq: 2, ID: "b", Data: []byte{0, 1}}}
	data := compress(encodeEntries(entries))
	got, err := decodeEntries(data, testLimit)
	if err != nil || len(got) != 2 || !bytes.Equal(got[1].Data, []byte{0, 1}) {
		t.Fatalf("compressed segment: %+v, %v", got, err)
	}
	for _, i := range []int{len(data) / 2, len(data) - 5} {
		corrupt := bytes.Clone(data)
		corrupt[i] ^= 0x01
		if _, err := decodeEntries(corrupt, testLimit); !errors.Is(err, history.ErrCorrupt) {
			t.Fatalf("flipped byte %d of a compressed segment: %v, want ErrCorrupt", i, err)
		}
	}
}

// A footer whose count is absurd (an edited object: the count is not under
// the checksum) is ErrCorrupt, not a panic or a huge allocation.
func TestCodecFooterCountOutOfRange(t *testing.T) {
	good := encodeEntries([]history.Entry{{Seq: 1, ID: "a", Data: []byte(`{}`)}})
	for _, n := range []string{"-1", "100000000000000", "2"} {
		data := bytes.Replace(good, []byte(`"n":1,`), []byte(`"n":`+n+`,`), 1)
		if bytes.Equal(data, good) {
			t.Fatal("footer not found")
		}
		if _, err := decodeEntries(data, testLimit); !errors.Is(err, history.ErrCorrupt) {
			t.Fatalf("footer count %s: %v, want ErrCorrupt", n, err)
		}
	}
}

// A footer without its newline is how a cut object ends: corrupt, although the checksum over
// the lines before it holds (found by FuzzDecodeEntries).
func TestCodecFooterWithoutItsNewline(t *testing.T) {
	good := encodeEntries([]history.Entry{{Seq: 1, ID: "a", Data: []byte(`{}`)}})
	if _, err := decodeEntries(good, testLimit); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeEntries(bytes.TrimSuffix(good, []byte("\n")), testLimit); !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("footer without its newline: %v, want ErrCorrupt", err)
	}
}

// FuzzDecodeEntries: whatever bytes a backend returns, the decoder answers
// entries or ErrCorrupt, never a panic. What it accepts holds one entry per
// line under the checksum, and encodes back to bytes that decode to the
// same entries: the codec reads what it writes.
func FuzzDecodeEntries(f *testing.F) {
	good := encodeEntries([]history.Entry{{Seq: 1, ID: "a", Data: []byte(`{}`)}, {Seq: 2, ID: "b", Data: []byte{0xff}}})
	f.Add(good)
	f.Add(compress(good))
	f.Add(bytes.Replace(good, []byte(`"n":2,`), []byte(`"n":-1,`), 1))
	f.Add(sealLines([]byte(`{"s":3,"id":"x","j": [1, 2] }`+"\n"+`{"s":4,"id":"y","b":""}`+"\n"), 2))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := decodeEntries(data, testLimit)
		if err != nil {
			if !errors.Is(err, history.ErrCorrupt) {
				t.Fatalf("decode error %v is not ErrCorrupt", err)
			}
			return
		}
		plain := data
		if isGzip(data) {
			plain = mustGunzip(t, data)
		}
		if lines := bytes.Count(plain, []byte("\n")) - 1; len(entries) != lines {
			t.Fatalf("%d entries from %d lines before the footer", len(entries), lines)
		}
		again, err := decodeEntries(encodeEntries(entries), testLimit)
		if err != nil {
			t.Fatalf("accepted entries do not encode and decode: %v", err)
		}
		if len(again) != len(entries) {
			t.Fatalf("%d entries after re-encoding, want %d", len(again), len(entries))
		}
		for i := range entries {
			if again[i].Seq != entries[i].Seq || again[i].ID != entries[i].ID || !bytes.Equal(again[i].Data, entries[i].Data) {
				t.Fatalf("entry %d: %+v after re-encoding, was %+v", i, again[i], entries[i])
			}
		}
	})
}

func mustGunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
