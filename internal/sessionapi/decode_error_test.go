package sessionapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/wire"
)

// A body that does not decode is described in JSON terms: field names and JSON types, never
// the server's Go types or packages.
func TestMalformedBodySaysWhatIsWrongInJSONTerms(t *testing.T) {
	s := &Server{}
	for body, want := range map[string]string{
		``:                             "the body is empty",
		`{"messages":[`:                "ends inside its JSON value",
		`{"messages":[}`:               "not valid JSON at byte 14",
		`{"messages":"hello"}`:         "field messages must be an array, not a string",
		`{"messages":[{"role":7}]}`:    "the value at /role of an item must be a string, not a number",
		`{"messages":[{"blocks":{}}]}`: "the value at /blocks of an item must be an array, not an object",
		`[]`:                           "the body must be an object, not an array",
	} {
		t.Run(body, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			var into wire.AppendRequest
			p := s.decode(httptest.NewRecorder(), r, &into)
			if p == nil {
				t.Fatal("decoded")
			}
			if !strings.Contains(p.Detail, want) {
				t.Errorf("detail %q, want it to say %q", p.Detail, want)
			}
			for _, internal := range []string{"Go ", "wire.", "conversation.", "struct", "unmarshal"} {
				if strings.Contains(p.Detail, internal) {
					t.Errorf("detail %q names the server's internals (%q)", p.Detail, internal)
				}
			}
		})
	}
}
