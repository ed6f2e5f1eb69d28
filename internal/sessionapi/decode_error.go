package sessionapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"
)

// bodyErrorDetail says what is wrong with a request body that did not decode, in the body's
// own terms (JSON types, field names, byte offsets): encoding/json's messages name the
// server's Go types, which a client neither knows nor needs.
func bodyErrorDetail(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	// pkg/conversation decodes its types with go-json-experiment, whose errors locate the value
	// by a JSON pointer within the item (a message, a state) being decoded.
	var semanticErr *jsonv2.SemanticError
	switch {
	case errors.Is(err, io.EOF):
		return "the body is empty; send a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the body ends inside its JSON value"
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("the body is not valid JSON at byte %d", syntaxErr.Offset)
	case errors.As(err, &typeErr):
		where := "the body"
		if typeErr.Field != "" {
			where = "field " + typeErr.Field
		}
		return fmt.Sprintf("%s must be %s, not %s", where, jsonKind(typeErr.Type), article(typeErr.Value))
	case errors.As(err, &semanticErr):
		where := "a value"
		if p := string(semanticErr.JSONPointer); p != "" {
			where = "the value at " + p + " of an item"
		}
		if semanticErr.GoType != nil && semanticErr.JSONKind != 0 {
			return fmt.Sprintf("%s must be %s, not %s", where, jsonKind(semanticErr.GoType), article(kindName(byte(semanticErr.JSONKind))))
		}
		if semanticErr.Err != nil {
			return where + ": " + semanticErr.Err.Error()
		}
		return where + " is not of the expected shape"
	}
	// Other decoders of pkg/conversation and pkg/wire write their own messages, in JSON terms.
	return err.Error()
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another JSON value"
}

// article puts "a"/"an" before encoding/json's name of the value it found ("string", "number",
// "number -1", "array", "object", "bool").
func article(value string) string {
	switch {
	case value == "":
		return "this value"
	case value == "bool":
		return "a boolean"
	case value == "null":
		return "null"
	case value[0] == 'a' || value[0] == 'o':
		return "an " + value
	}
	return "a " + value
}

// kindName is encoding/json's name of a JSON value whose first byte (go-json-experiment's
// jsontext.Kind) is k.
func kindName(k byte) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "bool"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return ""
}
