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

// memberOf returns the value of the named member of the JSON object obj (the last one when
// the name repeats), and whether there is one.
func memberOf(obj jsontext.Value, name string) (jsontext.Value, bool) {
	if obj.Kind() != '{' {
		return nil, false
	}
	dec := jsontext.NewDecoder(bytes.NewReader(obj), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	var found jsontext.Value
	ok := false
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		if tok.String() != name {
			if err := dec.SkipValue(); err != nil {
				return nil, false
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		found, ok = v.Clone(), true
	}
	return found, ok
}

// pathEdit sets (or, with a nil value, removes) the member at a path of nested objects.
type pathEdit struct {
	path  []string
	value jsontext.Value
}

// editPaths applies edits to the JSON object obj. An intermediate object that is missing is
// created for a value to set (and left alone for a removal); one that is not an object is
// replaced.
func editPaths(obj jsontext.Value, edits ...pathEdit) (jsontext.Value, error) {
	if len(edits) == 0 {
		return obj, nil
	}
	var direct []member
	nested := map[string][]pathEdit{}
	var order []string
	for _, e := range edits {
		if len(e.path) == 1 {
			direct = append(direct, member{e.path[0], e.value})
			continue
		}
		head := e.path[0]
		if _, seen := nested[head]; !seen {
			order = append(order, head)
		}
		nested[head] = append(nested[head], pathEdit{e.path[1:], e.value})
	}
	for _, head := range order {
		inner, ok := memberOf(obj, head)
		if !ok || inner.Kind() != '{' {
			if !setsAnything(nested[head]) {
				continue
			}
			inner = jsontext.Value(`{}`)
		}
		v, err := editPaths(inner, nested[head]...)
		if err != nil {
			return nil, err
		}
		direct = append(direct, member{head, v})
	}
	return replaceMembers(obj, direct...)
}

func setsAnything(edits []pathEdit) bool {
	for _, e := range edits {
		if e.value != nil {
			return true
		}
	}
	return false
}
