package jsonkeys

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestUnique(t *testing.T) {
	for _, doc := range []string{
		`{"a":1,"b":{"a":2,"c":[{"a":3},{"a":4}]},"c":"a"}`,
		`[{"x":1},{"x":1}]`,
		`{"a":{"b":1},"c":[1,2,{"b":2}],"b":"a"}`,
		`{"k":"v","kk":"v"}`,
		`"just a string"`, `42`, `null`, `{}`, `[]`,
		`{"a":`, // malformed: the decoder's to report
	} {
		if err := Unique([]byte(doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
	for _, doc := range []string{
		`{"should_block":true,"should_block":false}`,
		`{"input":{"x":1},"Input":{"x":2}}`,
		`{"stop_reason":"max_tokens","stop_rea\u017fon":"tool_use"}`,
		`{"a":{"b":1,"B":2}}`,
		`[1,{"c":[{"d":1,"d":2}]}]`,
		`{"a":[1,2],"x":{"y":1},"A":0}`,
		`{"kelvin":1,"\u212aelvin":2}`,
	} {
		err := Unique([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("%s: %v, want a key given twice", doc, err)
		}
	}
}

// FuzzUnique: whenever Unique accepts a valid document, decoding it into a
// map and into a case-insensitive struct sees each key once: no two keys
// of one object fold together.
func FuzzUnique(f *testing.F) {
	f.Add(`{"a":1,"A":2}`)
	f.Add(`{"a":{"b":[{"c":1}]},"d":2}`)
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) || Unique([]byte(doc)) != nil {
			return
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				seen := map[string]string{}
				for k, x := range v {
					if o, ok := seen[fold(k)]; ok {
						t.Fatalf("%q: keys %q and %q fold together", doc, o, k)
					}
					seen[fold(k)] = k
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err == nil {
			walk(v)
		}
	})
}
