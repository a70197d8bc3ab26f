package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// Section is a top-level section of the file that a runtime package owns
// (server, classifier). config reads it, expands ${...} in it and prints it
// for config show, but does not know its type: importing its owner would
// link gRPC, OpenTelemetry and Prometheus into everything that only reads
// policies. The runtime decodes it with the owner's type and defaults.
type Section struct {
	key  string
	src  *origin
	node *yaml.Node // as written; nil when the file has no such section
	// expanded is node with ${...} expanded, once Decode has done it:
	// expanding twice would expand what "$$" left.
	expanded *yaml.Node
	used     map[string]string // the variables expanded, with their values
	// decoded is what Decode filled: config show prints it, the owner's
	// defaults included, rather than the text alone.
	decoded any
}

// origin is the file a section came from, as decoding needs it later.
type origin struct {
	name    string // names the file in messages
	data    []byte // the text as written
	lookup  func(string) (string, bool)
	written map[string]string // Config.written
}

func (s *Section) bind(key string, src *origin) { s.key, s.src = key, src }

// UnmarshalYAML keeps the section's node for Decode; any shape is taken
// here, and checked there against the owner's type.
func (s *Section) UnmarshalYAML(n *yaml.Node) error {
	s.node = n
	return nil
}

// MarshalYAML prints what Decode filled, or the section as written.
func (s Section) MarshalYAML() (any, error) {
	if s.decoded != nil {
		return s.decoded, nil
	}
	return s.node, nil
}

// Written reports whether the file has the section (an absent one still
// decodes, to its owner's defaults).
func (s Section) Written() bool { return s.node != nil }

// IsZero leaves an absent section out of config show.
func (s Section) IsZero() bool { return s.decoded == nil && s.node == nil }

// Decode decodes the section into v, a pointer to the owner's config
// struct already holding its defaults (fields the file leaves out keep
// them), then runs validate when it is not nil. First the text as written
// is checked against v's type: unknown fields and values of the wrong type
// are errors with their line, as for the rest of the file, and "${N}" in a
// number field is one of them. Then string values are expanded (see the
// package documentation) and decoded. Every error names the file and shows
// no environment variable's value. From then on config show prints v.
func (s *Section) Decode(v any, validate func() error) error {
	name := "(config)"
	if s.src != nil {
		name = s.src.name
	}
	if s.node != nil {
		if err := s.src.decodeStrict(name, s.key, v); err != nil {
			return err
		}
		if s.expanded == nil {
			n, used := cloneNode(s.node), map[string]string{}
			if err := expandSection(n, s.key, s.src.lookup, s.src.written, used); err != nil {
				return inFile(name, err)
			}
			s.expanded, s.used = n, used
		}
		if err := s.expanded.Decode(v); err != nil {
			return scrub(fmt.Errorf("%s: %w", name, err), s.used)
		}
	}
	if validate != nil {
		if err := validate(); err != nil {
			return scrub(inFile(name, err), s.used)
		}
	}
	s.decoded = v
	return nil
}

// decodeStrict decodes the text as written of section key into a fresh
// value of v's type, for the errors only: yaml reports unknown fields only
// when it decodes a whole document, so the document is decoded into a
// struct holding v's type under key and taking the other sections as they
// come. (A fresh value, not a copy of *v: a copy would share v's pointers
// and maps, which decoding writes through.)
func (o *origin) decodeStrict(name, key string, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%s: decoding into %T, not a pointer", key, v)
	}
	doc := reflect.New(reflect.StructOf([]reflect.StructField{
		{Name: "Section", Type: rv.Type().Elem(), Tag: reflect.StructTag(`yaml:"` + key + `"`)},
		{Name: "Others", Type: reflect.TypeFor[map[string]any](), Tag: `yaml:",inline"`},
	}))
	dec := yaml.NewDecoder(bytes.NewReader(o.data))
	dec.KnownFields(true)
	if err := dec.Decode(doc.Interface()); err != nil && !errors.Is(err, io.EOF) {
		if explained := yamlErrors(name, o.data, doc.Type().Elem()); explained != nil {
			return explained
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// cloneNode copies a node tree, so that expanding it leaves the text as
// written for config show.
func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = cloneNode(k)
	}
	return &c
}
