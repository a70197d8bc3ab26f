package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// exactObject returns the members of the JSON object data, keyed exactly as
// written. encoding/json matches keys to struct fields ignoring case and
// keeps the last of two equal keys, so a document could say one thing to
// the agent, which reads its keys exactly, and another to toolgate; here a
// key given twice is an error and "CWD" is not "cwd".
func exactObject(data []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := t.(string)
		if !ok {
			return nil, errors.New("not an object")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("the key %q is given twice", clipTo(k, 40))
		}
		out[k] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return out, nil
}

// decodeExact decodes the JSON object data into the struct *v by its json
// tags, matching keys exactly (exactObject); fields that are structs or
// pointers to structs are decoded the same way, other fields with
// encoding/json. Keys without a field are ignored, as the agents ignore
// keys they do not know.
func decodeExact(data []byte, v any) error {
	m, err := exactObject(data)
	if err != nil {
		return err
	}
	rv := reflect.ValueOf(v).Elem()
	rt := rv.Type()
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		raw, ok := m[name]
		if name == "" || name == "-" || !ok {
			continue
		}
		fv := rv.Field(i)
		switch {
		case f.Type.Kind() == reflect.Struct:
			err = decodeExact(raw, fv.Addr().Interface())
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
			if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
				continue
			}
			p := reflect.New(f.Type.Elem())
			err = decodeExact(raw, p.Interface())
			fv.Set(p)
		default:
			err = json.Unmarshal(raw, fv.Addr().Interface())
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
