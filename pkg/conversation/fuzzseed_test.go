package conversation

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/test/fixtures"
)

// compactSeed shrinks a fixture for a fuzz seed: the Go fuzzer minimises every new input it
// finds, and minimising the kilobytes of a real transcript stalls a short fuzz run. Strings
// longer than 48 bytes (texts, paths; never the ids) are cut to 48, and at most maxValues
// top-level JSON values (lines) are kept.
func compactSeed(tb testing.TB, data []byte, maxValues int) []byte {
	tb.Helper()
	var out bytes.Buffer
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	for i := 0; i < maxValues && dec.PeekKind() != 0; i++ {
		var v any
		if err := json.UnmarshalDecode(dec, &v); err != nil {
			tb.Fatal(err)
		}
		short, err := json.Marshal(shorten(v), json.Deterministic(true))
		if err != nil {
			tb.Fatal(err)
		}
		out.Write(short)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func shorten(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > 48 {
			return x[:48]
		}
	case []any:
		for i := range x {
			x[i] = shorten(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = shorten(x[k])
		}
	}
	return v
}

func TestCompactSeedKeepsMessages(t *testing.T) {
	orig := fixtures.Read(t, fixtures.ClaudeMain)
	seed := compactSeed(t, orig, 12)
	s, err := ImportClaudeJSONL(seed)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Messages) != 8 || len(seed) >= len(orig) {
		t.Errorf("%d messages in a %d-byte seed", len(s.Messages), len(seed))
	}
}
