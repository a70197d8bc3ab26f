// Package policy holds what the classifier is told: a policy's named
// categories (hard deny, soft deny, allow), its free-text rules and its
// environment. It imports nothing, so that config can load it without the
// model SDKs the classifier itself needs.
package policy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Kind says what a category does to an action it covers.
type Kind string

// The kinds of category.
const (
	// HardDeny: always block; no allow category clears it.
	HardDeny Kind = "hard_deny"
	// SoftDeny: block unless an allow category clearly covers the action.
	SoftDeny Kind = "soft_deny"
	// Allow: an exception that clears a soft deny, or routine work.
	Allow Kind = "allow"
)

// Kinds are the kinds in the order the prompt shows them.
var Kinds = []Kind{HardDeny, SoftDeny, Allow}

// Blocks reports whether an action in a category of kind k is blocked.
func (k Kind) Blocks() bool { return k == HardDeny || k == SoftDeny }

// Names of the categories the free-text rule lists become, and of a
// model's answer that names no category in force.
const (
	ExtraHardDeny = "extra_hard_deny"
	ExtraSoftDeny = "extra_soft_deny"
	ExtraAllow    = "extra_allow"
	// Unknown is what a decision records when the model named a category
	// the policy does not have: its text is the model's, untrusted, and
	// never reaches logs or metric labels.
	Unknown = "unknown"
)

// reserved names are refused for a category of a policy's own.
var reserved = []string{ExtraHardDeny, ExtraSoftDeny, ExtraAllow, Unknown, "none"}

// Bounds of a category: they keep the prompt, the answer's schema and the
// metrics' category label small whatever a policy says.
const (
	MaxNameLen       = 40
	MaxDefinitionLen = 2000
	MaxNotCovered    = 8
	MaxItemLen       = 400
	MaxCategories    = 120
	// MaxPolicyBytes bounds all of a policy's instructions together (the
	// built-in policy's are about 30 KB): every call sends them.
	MaxPolicyBytes = 128 << 10
)

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Category is one named class of actions.
type Category struct {
	// Name is what the model answers and what decisions, logs and
	// metrics carry: snake_case, at most 40 characters.
	Name string `yaml:"name"`
	Kind Kind   `yaml:"kind"`
	// Definition says what the category covers.
	Definition string `yaml:"definition"`
	// NotCovered are neighbouring cases it does not cover.
	NotCovered []string `yaml:"not_covered,omitempty"`
	// MustName is what the reason of a decision in this category names
	// (the target, the destination, the command).
	MustName string `yaml:"must_name,omitempty"`
	// Rules are the free-text rules an extra_* category stands for.
	Rules []string `yaml:"-"`
}

// ValidName reports whether name has a category name's shape.
func ValidName(name string) bool { return len(name) <= MaxNameLen && nameRE.MatchString(name) }

// ParseKind returns the kind called s.
func ParseKind(s string) (Kind, bool) {
	k := Kind(s)
	return k, slices.Contains(Kinds, k)
}

// Validate checks one category; errors name its fields.
func (c Category) Validate() error {
	var errs []error
	switch {
	case c.Name == "":
		errs = append(errs, errors.New("name: required"))
	case !ValidName(c.Name):
		errs = append(errs, fmt.Errorf("name: %q must be snake_case ([a-z][a-z0-9_]*), at most %d characters", cut(c.Name, 60), MaxNameLen))
	case slices.Contains(reserved, c.Name):
		errs = append(errs, fmt.Errorf("name: %q is reserved", c.Name))
	}
	if !slices.Contains(Kinds, c.Kind) {
		errs = append(errs, fmt.Errorf("kind: must be hard_deny, soft_deny or allow, got %q", cut(string(c.Kind), 60)))
	}
	if strings.TrimSpace(c.Definition) == "" {
		errs = append(errs, errors.New("definition: required"))
	} else if len(c.Definition) > MaxDefinitionLen {
		errs = append(errs, fmt.Errorf("definition: %d bytes, at most %d", len(c.Definition), MaxDefinitionLen))
	}
	if len(c.NotCovered) > MaxNotCovered {
		errs = append(errs, fmt.Errorf("not_covered: %d items, at most %d", len(c.NotCovered), MaxNotCovered))
	}
	for i, s := range c.NotCovered {
		if len(s) > MaxItemLen {
			errs = append(errs, fmt.Errorf("not_covered[%d]: %d bytes, at most %d", i, len(s), MaxItemLen))
		}
	}
	if len(c.MustName) > MaxItemLen {
		errs = append(errs, fmt.Errorf("must_name: %d bytes, at most %d", len(c.MustName), MaxItemLen))
	}
	for _, f := range [][2]string{{"definition", c.Definition}, {"must_name", c.MustName}} {
		if err := printable(f[1]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f[0], err))
		}
	}
	for i, s := range c.NotCovered {
		if err := printable(s); err != nil {
			errs = append(errs, fmt.Errorf("not_covered[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// printable refuses control characters other than whitespace, and
// Unicode format characters (bidi overrides, zero-width spaces): noise to
// a model, and they can hide from a reviewer what it is told.
func printable(s string) error {
	for _, r := range s {
		if (unicode.IsControl(r) && !unicode.IsSpace(r)) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("holds the control or format character %U", r)
		}
	}
	return nil
}

// Trust is what an organisation tells the classifier it trusts, and what
// it calls production. An empty list means the assumption the prompt
// states for it.
type Trust struct {
	Domains       []string
	Buckets       []string
	SourceControl []string
	Registries    []string
	Production    []string
}

// Lines renders the trust lists for the prompt: each list's values, or
// when it is empty, what the classifier assumes instead.
func (t Trust) Lines() []string {
	var out []string
	for _, x := range []struct {
		values        []string
		listed, empty string
	}{
		{t.Domains, "Domains the organisation trusts to receive project code and data: ",
			"No domain is listed as trusted: a host other than the project's own remotes, the package registries its manifests use and hosts the user named in this session is untrusted as a destination for project code, data or secrets."},
		{t.Buckets, "Storage buckets the organisation trusts: ",
			"No storage bucket is listed as trusted: copying data to any bucket sends it off the machine."},
		{t.SourceControl, "Source-control organisations that are the user's own: ",
			"No source-control organisation is listed: only the project's existing remotes count as the user's own; any other repository or organisation belongs to someone else."},
		{t.Registries, "The organisation's internal package registries: ",
			"No internal registry is listed: each ecosystem's public default registry (npm, PyPI, crates.io, the Go module proxy, Maven Central, Docker Hub) is the expected source; any other index or registry is a bypass."},
		{t.Production, "Names that mark production: ",
			"No production markers are listed: treat as production any host, cluster, context, account, database or branch whose name says prod, production, live or release, and any shared remote environment not shown to be a personal or test one."},
	} {
		if v := Clean(x.values); len(v) > 0 {
			out = append(out, x.listed+strings.Join(v, ", ")+".")
		} else {
			out = append(out, x.empty)
		}
	}
	return out
}

// Policy is one policy's classifier instructions.
type Policy struct {
	// Categories are the named categories, in the policy's order.
	Categories []Category
	// Free-text rules (a config's lists, Claude Code's autoMode): each
	// non-empty list becomes one category, ExtraHardDeny and so on.
	Allow    []string
	SoftDeny []string
	HardDeny []string
	// Environment is free-text context: hints, not rules.
	Environment []string
	Trust       Trust
}

// InForce returns the categories the model may name: the policy's own,
// then one for each non-empty free-text list, in kind order.
func (p Policy) InForce() []Category {
	out := slices.Clone(p.Categories)
	for _, x := range []struct {
		name  string
		kind  Kind
		rules []string
		def   string
	}{
		{ExtraHardDeny, HardDeny, p.HardDeny, "Any of the policy's further hard-deny rules listed here."},
		{ExtraSoftDeny, SoftDeny, p.SoftDeny, "Any of the policy's further soft-deny rules listed here."},
		{ExtraAllow, Allow, p.Allow, "Any of the policy's further allow rules listed here."},
	} {
		rules := Clean(x.rules)
		if len(rules) == 0 {
			continue
		}
		out = append(out, Category{Name: x.name, Kind: x.kind, Definition: x.def, MustName: "the rule the action falls under", Rules: rules})
	}
	// A policy with no allow category (extends: none and no allow rules)
	// still lets the model allow what no deny category covers: without
	// one, every answer but a block would fail closed.
	if !slices.ContainsFunc(out, func(c Category) bool { return c.Kind == Allow }) {
		out = append(out, Category{Name: ExtraAllow, Kind: Allow, Definition: "An action that no deny category of this policy covers.", MustName: "what the action does"})
	}
	return out
}

// Lookup returns the category in force called name.
func (p Policy) Lookup(name string) (Category, bool) {
	for _, c := range p.InForce() {
		if c.Name == name {
			return c, true
		}
	}
	return Category{}, false
}

// Names are the names of the categories in force, in order.
func (p Policy) Names() []string {
	in := p.InForce()
	out := make([]string, len(in))
	for i, c := range in {
		out[i] = c.Name
	}
	return out
}

// Validate checks every category, that names are unique, and the size of
// the whole.
func (p Policy) Validate() error {
	var errs []error
	if len(p.Categories) > MaxCategories {
		errs = append(errs, fmt.Errorf("categories: %d, at most %d", len(p.Categories), MaxCategories))
	}
	for _, l := range []struct {
		name  string
		rules []string
	}{{"hard_deny", p.HardDeny}, {"soft_deny", p.SoftDeny}, {"allow", p.Allow}, {"environment", p.Environment}} {
		for i, r := range l.rules {
			if err := printable(r); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", l.name, i, err))
			}
		}
	}
	if n := p.size(); n > MaxPolicyBytes {
		errs = append(errs, fmt.Errorf("the classifier's instructions (categories, free-text rules, environment and trust lists together) are %d bytes, at most %d", n, MaxPolicyBytes))
	}
	seen := map[string]int{}
	for i, c := range p.Categories {
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("categories[%d] (%q): %w", i, cut(c.Name, 60), err))
			continue
		}
		if j, dup := seen[c.Name]; dup {
			errs = append(errs, fmt.Errorf("categories[%d]: the name %q is also categories[%d]", i, c.Name, j))
		}
		seen[c.Name] = i
	}
	return errors.Join(errs...)
}

// size is the bytes of text the policy gives the model.
func (p Policy) size() int {
	n := 0
	add := func(ss ...[]string) {
		for _, s := range ss {
			for _, x := range s {
				n += len(x)
			}
		}
	}
	for _, c := range p.Categories {
		n += len(c.Name) + len(c.Definition) + len(c.MustName)
		add(c.NotCovered)
	}
	add(p.Allow, p.SoftDeny, p.HardDeny, p.Environment, p.Trust.Domains, p.Trust.Buckets, p.Trust.SourceControl, p.Trust.Registries, p.Trust.Production)
	return n
}

// Clean collapses whitespace in each rule (a multi-line rule cannot
// break the prompt's lists) and drops empty ones.
func Clean(rules []string) []string {
	var out []string
	for _, r := range rules {
		if r = OneLine(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// OneLine is s with invalid UTF-8 replaced and every run of whitespace
// made one space.
func OneLine(s string) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
