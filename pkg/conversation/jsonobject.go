package conversation

import (
	"bytes"
	"errors"

	"github.com/go-json-experiment/json/jsontext"
)

// member is one name/value pair of a JSON object.
type member struct {
	name  string
	value jsontext.Value
}

// rewriteObject copies the JSON object obj member by member, keeping their order. edit sees
// each member and returns its new value, or nil to drop it. Members of add whose names were
// not seen are appended at the end.
func rewriteObject(obj jsontext.Value, edit func(name string, v jsontext.Value) (jsontext.Value, error), add ...member) (jsontext.Value, error) {
	if obj.Kind() != '{' {
		return nil, errors.New("not a JSON object")
	}
	dec := jsontext.NewDecoder(bytes.NewReader(obj), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	var out bytes.Buffer
	out.Grow(len(obj) + 64)
	enc := jsontext.NewEncoder(&out, jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(add))
	for dec.PeekKind() != '}' {
		nameTok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := nameTok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		seen[name] = true
		if edit != nil {
			if v, err = edit(name, v); err != nil {
				return nil, err
			}
		}
		if v == nil {
			continue
		}
		if err := writeMember(enc, name, v); err != nil {
			return nil, err
		}
	}
	for _, m := range add {
		if seen[m.name] || m.value == nil {
			continue
		}
		if err := writeMember(enc, m.name, m.value); err != nil {
			return nil, err
		}
	}
	if err := enc.WriteToken(jsontext.EndObject); err != nil {
		return nil, err
	}
	return jsontext.Value(bytes.TrimRight(out.Bytes(), "\n")), nil
}

func writeMember(enc *jsontext.Encoder, name string, v jsontext.Value) error {
	if err := enc.WriteToken(jsontext.String(name)); err != nil {
		return err
	}
	return enc.WriteValue(v)
}

// replaceMembers returns obj with the values of the named members replaced (in place, or
// appended when absent); a nil value in set removes the member.
func replaceMembers(obj jsontext.Value, set ...member) (jsontext.Value, error) {
	edit := func(name string, v jsontext.Value) (jsontext.Value, error) {
		for _, m := range set {
			if m.name == name {
				return m.value, nil
			}
		}
		return v, nil
	}
	return rewriteObject(obj, edit, set...)
}
