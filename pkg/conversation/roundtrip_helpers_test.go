package conversation

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

// jsonTree is a JSON value for semantic comparison: objects are maps (the last of repeated
// names wins, as every reader here takes it), member order and whitespace do not count,
// numbers compare by their literal (so a reformatted number is a difference).
type jsonNumber string

func jsonTreeOf(data []byte) (any, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	v, err := readTree(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

func readTree(dec *jsontext.Decoder) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		obj := map[string]any{}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			name := tok.String()
			v, err := readTree(dec)
			if err != nil {
				return nil, err
			}
			obj[name] = v
		}
		_, err := dec.ReadToken()
		return obj, err
	case '[':
		arr := []any{}
		for dec.PeekKind() != ']' {
			v, err := readTree(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.ReadToken()
		return arr, err
	case '"':
		return tok.String(), nil
	case '0':
		return jsonNumber(tok.String()), nil
	case 't', 'f':
		return tok.Bool(), nil
	default:
		return nil, nil
	}
}

// sameJSON reports whether two JSON texts hold the same value (see jsonTreeOf); two empty
// texts are the same, an invalid one is not the same as anything.
func sameJSON(a, b []byte) bool {
	if len(bytes.TrimSpace(a)) == 0 || len(bytes.TrimSpace(b)) == 0 {
		return len(bytes.TrimSpace(a)) == len(bytes.TrimSpace(b))
	}
	ta, err := jsonTreeOf(a)
	if err != nil {
		return false
	}
	tb, err := jsonTreeOf(b)
	if err != nil {
		return false
	}
	return reflect.DeepEqual(ta, tb)
}

// jsonDiff names the first place where two JSON texts differ, for failure messages.
func jsonDiff(want, got []byte) string {
	tw, err := jsonTreeOf(want)
	if err != nil {
		return "want: " + err.Error()
	}
	tg, err := jsonTreeOf(got)
	if err != nil {
		return "got: " + err.Error()
	}
	return cmp.Diff(tw, tg)
}

// sameState compares states with raw JSON fields compared as JSON, not as bytes: an
// importer keeps what it read, formatted as the file had it.
var sameState = cmp.Comparer(func(a, b jsontext.Value) bool { return sameJSON(a, b) })
