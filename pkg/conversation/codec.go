package conversation

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// lenientJSON are the options of every JSON call of the package. They read what real
// transcripts contain: invalid UTF-8 is kept, duplicate names are tolerated (the last wins); so
// whatever an importer accepted can always be written to a snapshot.
var lenientJSON = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// mustString is s as a JSON string; bytes that are not UTF-8 are kept as they are.
func mustString(s string) jsontext.Value {
	v, _ := json.Marshal(s, lenientJSON)
	return v
}
