// Package jsonkeys refuses JSON objects that name a key twice. encoding/json
// keeps the last of two equal keys and matches keys to struct fields
// ignoring case (with Unicode folding: "ſ" is "s"), so a document can say
// one thing to a reader that takes the first key and another to toolgate;
// where a document decides something (a model's verdict, a corpus label),
// it must say it once.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// Unique returns an error naming the first key given twice in an object of
// data, comparing keys as encoding/json matches them to struct fields.
// Malformed JSON is not its concern: it returns nil, and the decoder that
// follows reports it. The work is linear in len(data).
func Unique(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		keys    map[string]bool // nil in an array
		wantKey bool
	}
	var stack []*frame
	for {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		inObject := top != nil && top.keys != nil
		switch v := t.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if inObject {
					top.wantKey = true // after this value, a key
				}
				f := &frame{wantKey: v == '{'}
				if v == '{' {
					f.keys = map[string]bool{}
				}
				stack = append(stack, f)
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if inObject && top.wantKey {
				k := fold(v)
				if top.keys[k] {
					return fmt.Errorf("the key %q is given twice", cut(v, 40))
				}
				top.keys[k] = true
				top.wantKey = false
			} else if inObject {
				top.wantKey = true
			}
		default:
			if inObject {
				top.wantKey = true
			}
		}
		if len(stack) == 0 {
			return nil
		}
	}
}

// fold maps every rune to the smallest of its simple case folding orbit,
// so that keys encoding/json would take for one compare equal.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		return m
	}, s)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
