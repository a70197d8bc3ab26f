package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/engine/vocab"
)

// yamlErrors explains why data does not decode into a value of type t in
// the file's terms, one error a problem: the line, the YAML path and what
// is wrong, with the nearest known name for an unknown field
// (toolgate.yaml:3: policies.default: unknown field "permisions" (did you
// mean "permissions"?)). The yaml package's own errors name Go types
// (field permisions not found in type config.Policy), which mean nothing
// to whoever wrote the file. It returns nil when it finds nothing to say;
// the caller then reports the yaml package's error (a syntax error, which
// names its line).
func yamlErrors(name string, data []byte, t reflect.Type) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	var errs []error
	checkNode(doc.Content[0], t, "", func(n *yaml.Node, path, msg string) {
		if path != "" {
			msg = path + ": " + msg
		}
		errs = append(errs, fmt.Errorf("%s:%d: %s", name, n.Line, msg))
	})
	return errors.Join(errs...)
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

// checkNode checks n against t, reporting each problem with its path.
func checkNode(n *yaml.Node, t reflect.Type, path string, report func(n *yaml.Node, path, msg string)) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // null leaves the default
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		// It decodes itself; what it refuses, it says in its own words.
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			report(n, path, "want a mapping, got "+describeNode(n))
			return
		}
		fields, open := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				if !open {
					report(k, path, "unknown field "+strconv.Quote(k.Value)+didYouMean(k.Value, slices.Sorted(maps.Keys(fields))))
				}
				continue
			}
			checkNode(v, ft, join(path, k.Value), report)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			report(n, path, "want a mapping, got "+describeNode(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			checkNode(v, t.Elem(), join(path, k.Value), report)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			report(n, path, "want a list, got "+describeNode(n))
			return
		}
		for i, item := range n.Content {
			checkNode(item, t.Elem(), path+"["+strconv.Itoa(i)+"]", report)
		}
	case reflect.Interface:
		// Anything goes.
	default:
		if n.Kind != yaml.ScalarNode {
			report(n, path, "want "+describeType(t)+", got "+describeNode(n))
			return
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			report(n, path, "want "+describeType(t)+", got "+describeNode(n))
		}
	}
}

// yamlFields maps the YAML keys of struct t to their types, inline
// structs included; open is true when an inline map takes other keys.
func yamlFields(t reflect.Type) (fields map[string]reflect.Type, open bool) {
	fields = map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Map {
				open = true
				continue
			}
			inner, innerOpen := yamlFields(ft)
			for k, v := range inner {
				fields[k] = v
			}
			open = open || innerOpen
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields, open
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describeType names what a value of t is written as.
func describeType(t reflect.Type) string {
	if t == durationType {
		return "a duration (5s, 1m30s)"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a " + t.Kind().String()
}

// describeNode says what n is, quoting a scalar's text (shortened).
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if r := []rune(v); len(r) > 40 {
		v = string(r[:40]) + "..."
	}
	return strconv.Quote(v)
}

// didYouMean suggests the known name nearest to name, when one is near
// enough to be a typo of it; "" otherwise.
func didYouMean(name string, known []string) string {
	if best := vocab.Nearest(name, known); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}
