package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// expandSection expands the references in the string values of an owned
// section (server, classifier), in place. Policies are never expanded:
// their rules are shell and path patterns in which "$" and "${" are literal
// text (Bash(echo ${HOME})). Working on the node tree, after parsing, means
// a variable's value is only ever a scalar's text: it cannot add keys,
// lists or documents. written receives, by field path, the text as written
// of every value that expansion changed (config show prints that text,
// never the value), and used the variables read, with their values. Errors
// name the line, the field path and the variable, never its value.
func expandSection(n *yaml.Node, key string, lookup func(string) (string, bool), written, used map[string]string) error {
	inner := lookup
	lookup = func(name string) (string, bool) {
		v, ok := inner(name)
		if ok {
			used[name] = v
		}
		return v, ok
	}
	var errs []error
	expandNode(n, key, lookup, written, &errs)
	return errors.Join(errs...)
}

func expandNode(n *yaml.Node, path string, lookup func(string) (string, bool), written map[string]string, errs *[]error) {
	if n.Anchor != "" {
		// An alias elsewhere (a policy rule) would carry the expanded
		// value out of these sections, past config show's masking.
		*errs = append(*errs, fmt.Errorf("line %d: %s: YAML anchors are not supported in server and classifier", n.Line, path))
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			expandNode(n.Content[i+1], path+"."+n.Content[i].Value, lookup, written, errs)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			expandNode(c, path+"["+strconv.Itoa(i)+"]", lookup, written, errs)
		}
	case yaml.ScalarNode:
		// Only strings: "${N}" in a number or duration field has already
		// failed to decode, with its line (Section.Decode checks the text
		// as written first).
		if n.ShortTag() != "!!str" || !strings.Contains(n.Value, "$") {
			return
		}
		v, err := expand(n.Value, lookup)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("line %d: %s: %w", n.Line, path, err))
			return
		}
		if v != n.Value {
			written[path] = n.Value
			// Still a string, whatever the value looks like ("true", "1").
			n.Value, n.Tag = v, "!!str"
		}
	case yaml.AliasNode:
		// The anchored value would show up here expanded, while config
		// show knows it by the anchor's path only; and an anchor could
		// carry a secret's value out of these sections.
		*errs = append(*errs, fmt.Errorf("line %d: %s: YAML aliases are not supported in server and classifier; write the value again", n.Line, path))
	}
}

// expand replaces ${NAME} with the variable's value and ${NAME:-default}
// with its value or, when it is unset or empty, the default; $$ is a
// literal "$". Any other "$" is kept as written. An unset variable without a
// default is an error.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i == len(s)-1 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			s = s[i+2:]
			continue
		case '{':
		default:
			b.WriteByte('$')
			s = s[i+1:]
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			// The rest of the text is not quoted: it may hold a password.
			return "", errors.New("unclosed ${ (write $$ for a literal $)")
		}
		ref := s[i : i+end+1]
		inner := ref[2 : len(ref)-1]
		name, def, hasDef := strings.Cut(inner, ":-")
		if !validName(name) {
			return "", fmt.Errorf("%q: %q is not a variable name (letters, digits and _, not starting with a digit; write $$ for a literal $)", ref, name)
		}
		if hasDef && strings.ContainsAny(def, "${") {
			return "", fmt.Errorf("%q: a default may not contain $ or {", ref)
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", fmt.Errorf("environment variable %s is not set (write ${%s:-default} for a default)", name, name)
		case v == "" && !hasDef:
			// An empty token_file or tls.cert_file would turn auth or TLS
			// off without a word; say ${NAME:-} to mean "may be empty".
			return "", fmt.Errorf("environment variable %s is empty (write ${%s:-} if empty is meant)", name, name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

func validName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// scrub replaces the values of the variables in used with their ${NAME}
// in err's text: validation errors quote bad values, and a bad value that
// came from the environment may hold a secret. Values shorter than four
// bytes are left: they would garble the text and hide nothing.
func scrub(err error, used map[string]string) error {
	msg := err.Error()
	// Longest first, so that a value containing another is replaced whole.
	names := slices.SortedFunc(maps.Keys(used), func(a, b string) int { return cmp.Compare(len(used[b]), len(used[a])) })
	for _, name := range names {
		if v := used[name]; len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "${"+name+"}")
			// Errors quote values with %q, which escapes " and \.
			if q := strconv.Quote(v); q[1:len(q)-1] != v {
				msg = strings.ReplaceAll(msg, q[1:len(q)-1], "${"+name+"}")
			}
		}
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// osLookup is the process environment.
func osLookup(name string) (string, bool) { return os.LookupEnv(name) }
