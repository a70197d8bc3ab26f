package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/engine/rules"
)

// Origin names of the layers, as config show prints them.
const originBuiltin = "built-in"

// Values of a policy's extends.
const (
	extendsBuiltin = "builtin"
	extendsNone    = "none"
)

// Removals are the built-in rules a policy drops, by list.
type Removals struct {
	Permissions struct {
		Allow []string `yaml:"allow,omitempty"`
		Ask   []string `yaml:"ask,omitempty"`
		Deny  []string `yaml:"deny,omitempty"`
	} `yaml:"permissions,omitempty"`
	AutoMode struct {
		Allow       []string `yaml:"allow,omitempty"`
		SoftDeny    []string `yaml:"soft_deny,omitempty"`
		HardDeny    []string `yaml:"hard_deny,omitempty"`
		Environment []string `yaml:"environment,omitempty"`
		// Categories names built-in categories the policy turns off.
		Categories []string `yaml:"categories,omitempty"`
	} `yaml:"auto_mode,omitempty"`
}

// layeredList is one list of a policy that layers: its field path, the
// list, and the list of removals that name its built-in entries (nil: its
// built-in entries cannot be removed).
type layeredList struct {
	path   string
	list   func(*Policy) *[]string
	remove func(*Removals) *[]string
}

var layeredLists = []layeredList{
	{"permissions.deny", func(p *Policy) *[]string { return &p.Permissions.Deny }, func(r *Removals) *[]string { return &r.Permissions.Deny }},
	{"permissions.ask", func(p *Policy) *[]string { return &p.Permissions.Ask }, func(r *Removals) *[]string { return &r.Permissions.Ask }},
	{"permissions.allow", func(p *Policy) *[]string { return &p.Permissions.Allow }, func(r *Removals) *[]string { return &r.Permissions.Allow }},
	{"auto_mode.hard_deny", func(p *Policy) *[]string { return &p.AutoMode.HardDeny }, func(r *Removals) *[]string { return &r.AutoMode.HardDeny }},
	{"auto_mode.soft_deny", func(p *Policy) *[]string { return &p.AutoMode.SoftDeny }, func(r *Removals) *[]string { return &r.AutoMode.SoftDeny }},
	{"auto_mode.allow", func(p *Policy) *[]string { return &p.AutoMode.Allow }, func(r *Removals) *[]string { return &r.AutoMode.Allow }},
	{"auto_mode.environment", func(p *Policy) *[]string { return &p.AutoMode.Environment }, func(r *Removals) *[]string { return &r.AutoMode.Environment }},
	{"auto_mode.trusted_domains", func(p *Policy) *[]string { return &p.AutoMode.TrustedDomains }, nil},
	{"auto_mode.trusted_buckets", func(p *Policy) *[]string { return &p.AutoMode.TrustedBuckets }, nil},
	{"auto_mode.source_control_orgs", func(p *Policy) *[]string { return &p.AutoMode.SourceControlOrgs }, nil},
	{"auto_mode.internal_registries", func(p *Policy) *[]string { return &p.AutoMode.InternalRegistries }, nil},
	{"auto_mode.production_markers", func(p *Policy) *[]string { return &p.AutoMode.ProductionMarkers }, nil},
	// Protected paths and read roots only ever add to the engine's own;
	// nothing built in is removable through them.
	{"safe_tools", func(p *Policy) *[]string { return &p.SafeTools }, nil},
	{"protected_paths", func(p *Policy) *[]string { return &p.ProtectedPaths }, nil},
	{"read_roots", func(p *Policy) *[]string { return &p.ReadRoots }, nil},
}

// layers records how a policy was made: the files it came from, where each
// entry of each list came from, and what it dropped of the built-in one.
type layers struct {
	sources     []string            // the layers in order: built-in (unless extends: none), the file, imported settings
	from        map[string][]string // list path -> the origin of each entry
	categories  []string            // the origin of each category of auto_mode.categories
	removed     []removal
	extendsNone bool
}

// removal is one built-in rule a policy dropped.
type removal struct {
	field string // where the setting is: policies.p.remove_builtin.permissions.deny[0]
	list  string // permissions.deny
	rule  string
}

func newLayers(origin string, p *Policy) *layers {
	l := &layers{sources: []string{origin}, from: map[string][]string{}}
	for _, f := range layeredLists {
		l.from[f.path] = repeat(origin, len(*f.list(p)))
	}
	l.categories = repeat(origin, len(p.AutoMode.Categories))
	return l
}

// add records entries appended to a list from origin.
func (l *layers) add(path, origin string, n int) {
	if !slices.Contains(l.sources, origin) {
		l.sources = append(l.sources, origin)
	}
	l.from[path] = append(l.from[path], repeat(origin, n)...)
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// builtin is the embedded default's default policy, the layer every
// config file's policies extend.
var builtin = sync.OnceValues(func() (Policy, error) {
	c, err := Default()
	if err != nil {
		return Policy{}, err
	}
	p, ok := c.Policies[engine.DefaultPolicy]
	if !ok {
		return Policy{}, errors.New("embedded default config: no default policy")
	}
	return p, nil
})

// BuiltinPolicy returns the built-in policy that config files extend.
func BuiltinPolicy() (Policy, error) {
	p, err := builtin()
	if err != nil {
		return Policy{}, err
	}
	return clonePolicy(p), nil
}

func clonePolicy(p Policy) Policy {
	for _, f := range layeredLists {
		*f.list(&p) = slices.Clone(*f.list(&p))
	}
	p.ToolAliases = maps.Clone(p.ToolAliases)
	p.AutoMode.Categories = slices.Clone(p.AutoMode.Categories)
	for i := range p.AutoMode.Categories {
		p.AutoMode.Categories[i].NotCovered = slices.Clone(p.AutoMode.Categories[i].NotCovered)
	}
	if p.Unattended != nil {
		u := *p.Unattended
		u.ApproveSources = slices.Clone(u.ApproveSources)
		p.Unattended = &u
	}
	return p
}

// extendBuiltin puts the built-in policy under each of c's policies, as
// their extends and remove_builtin settings say, and records the layers.
// Every problem is reported, each naming its field.
func (c *Config) extendBuiltin() error {
	base, err := builtin()
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range c.PolicyNames() {
		p, l := c.Policies[name], c.layers[name]
		field := "policies." + name
		if err := p.Unattended.validate(field); err != nil {
			errs = append(errs, err)
		}
		// The file's rules are checked here, where their positions are
		// still the file's: the engine sees them after the built-in ones.
		if err := parsePermissions(&p); err != nil {
			errs = append(errs, fmt.Errorf("%s.permissions.%w", field, err))
			continue
		}

		switch p.Extends {
		case "", extendsBuiltin:
		case extendsNone:
			l.extendsNone = true
			if p.RemoveBuiltin != nil {
				errs = append(errs, fmt.Errorf("%s.remove_builtin: set with extends: none, which already leaves out every built-in rule", field))
			}
			if p.AcceptEdits == nil {
				// On unless set to false; config show prints it so.
				p.AcceptEdits = ptr(true)
				c.Policies[name] = p
			}
			if err := p.AutoMode.Classifier().Validate(); err != nil {
				errs = append(errs, prefixEach(field+".auto_mode: ", err))
			}
			continue
		default:
			errs = append(errs, fmt.Errorf("%s.extends: must be %s or %s, got %q", field, extendsBuiltin, extendsNone, p.Extends))
			continue
		}
		drop := map[string]map[string]bool{}
		if r := p.RemoveBuiltin; r != nil {
			for _, f := range layeredLists {
				if f.remove == nil {
					continue
				}
				for i, rule := range *f.remove(r) {
					at := fmt.Sprintf("%s.remove_builtin.%s[%d]", field, f.path, i)
					if !slices.Contains(*f.list(&base), rule) {
						errs = append(errs, fmt.Errorf("%s: %q is not a built-in %s rule (toolgate config defaults lists them)", at, rule, f.path))
						continue
					}
					if drop[f.path] == nil {
						drop[f.path] = map[string]bool{}
					}
					drop[f.path][rule] = true
					l.removed = append(l.removed, removal{field: at, list: f.path, rule: rule})
				}
			}
			for i, name := range r.AutoMode.Categories {
				at := fmt.Sprintf("%s.remove_builtin.auto_mode.categories[%d]", field, i)
				if !slices.ContainsFunc(base.AutoMode.Categories, func(c policy.Category) bool { return c.Name == name }) {
					errs = append(errs, fmt.Errorf("%s: %q is not a built-in category (toolgate config defaults lists them)", at, name))
					continue
				}
				if drop[categoriesPath] == nil {
					drop[categoriesPath] = map[string]bool{}
				}
				drop[categoriesPath][name] = true
				l.removed = append(l.removed, removal{field: at, list: categoriesPath, rule: name})
			}
		}
		p.AutoMode.Categories, l.categories = layerCategories(base.AutoMode.Categories, drop[categoriesPath], p.AutoMode.Categories, l.categories)
		for _, f := range layeredLists {
			own, ownFrom := *f.list(&p), l.from[f.path]
			// Nil only where both are (a decoded [] is not): a file that
			// repeats the built-in policy loads equal to it.
			var list, from []string
			if *f.list(&base) != nil || own != nil {
				list, from = []string{}, []string{}
			}
			seen := map[string]bool{}
			for _, rule := range *f.list(&base) {
				if !drop[f.path][rule] && !seen[rule] {
					seen[rule] = true
					list, from = append(list, rule), append(from, originBuiltin)
				}
			}
			// A rule the file repeats stays where the built-in put it.
			for i, rule := range own {
				if !seen[rule] {
					seen[rule] = true
					list, from = append(list, rule), append(from, ownFrom[i])
				}
			}
			*f.list(&p), l.from[f.path] = list, from
		}
		for k, v := range base.ToolAliases {
			if have, ok := p.ToolAliases[k]; ok && have != v {
				errs = append(errs, fmt.Errorf("%s.tool_aliases.%s: the built-in policy makes it %s", field, k, v))
				continue
			}
			if p.ToolAliases == nil {
				p.ToolAliases = map[string]string{}
			}
			p.ToolAliases[k] = v
		}
		if p.AcceptEdits == nil {
			p.AcceptEdits = base.AcceptEdits
		}
		l.sources = slices.Insert(l.sources, 0, originBuiltin)
		// The whole, as the classifier will take it.
		if err := p.AutoMode.Classifier().Validate(); err != nil {
			errs = append(errs, prefixEach(field+".auto_mode: ", err))
		}
		c.Policies[name] = p
	}
	return errors.Join(errs...)
}

// categoriesPath is the field path of a policy's categories.
const categoriesPath = "auto_mode.categories"

// replacesBuiltin marks, in config show, a file's category that replaces
// the built-in one of its name.
const replacesBuiltin = " (replaces the built-in category)"

// layerCategories is the built-in categories, less those dropped, each
// replaced by the policy's own of the same name, then the policy's new
// ones; with the origin of each.
func layerCategories(base []policy.Category, drop map[string]bool, own []policy.Category, ownFrom []string) ([]policy.Category, []string) {
	var out []policy.Category
	var from []string
	mine := map[string]int{}
	for i, c := range own {
		mine[c.Name] = i
	}
	for _, c := range base {
		if drop[c.Name] {
			continue
		}
		// A category repeated word for word is the built-in one: what
		// config show prints loads back without a replacement to warn of.
		if i, ok := mine[c.Name]; ok && !sameCategory(own[i], c) {
			out, from = append(out, own[i]), append(from, ownFrom[i]+replacesBuiltin)
			continue
		}
		out, from = append(out, c), append(from, originBuiltin)
	}
	// New names, and names of built-in categories the policy turned off:
	// a file that drops one and defines its own gets its own.
	for i, c := range own {
		if drop[c.Name] || !slices.ContainsFunc(base, func(b policy.Category) bool { return b.Name == c.Name }) {
			out, from = append(out, c), append(from, ownFrom[i])
		}
	}
	return out, from
}

// sameCategory reports whether a and b tell the model the same thing:
// text is compared as the prompt shows it (YAML's folding styles differ
// in whitespace only).
func sameCategory(a, b policy.Category) bool {
	return a.Name == b.Name && a.Kind == b.Kind && policy.OneLine(a.Definition) == policy.OneLine(b.Definition) &&
		policy.OneLine(a.MustName) == policy.OneLine(b.MustName) &&
		slices.Equal(policy.Clean(a.NotCovered), policy.Clean(b.NotCovered)) && slices.Equal(a.Rules, b.Rules)
}

// prefixEach prefixes each of err's joined errors, so that every line of
// a multi-line error names its field in full.
func prefixEach(prefix string, err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = fmt.Errorf("%s%w", prefix, e)
	}
	return errors.Join(out...)
}

// parsePermissions reports the first rule of p's permissions that does
// not parse, as the engine would (deny[0] "Bash(rm": ...).
func parsePermissions(p *Policy) error {
	_, _, err := rules.Compile(p.Permissions.Deny, p.Permissions.Ask, p.Permissions.Allow)
	return err
}

// layerWarnings are the removals of built-in rules, one line each, in the
// order of the policies' names: what validate prints and serve logs.
func (c *Config) layerWarnings() []string {
	var out []string
	for _, name := range c.PolicyNames() {
		l := c.layers[name]
		if l == nil {
			continue
		}
		if l.extendsNone {
			out = append(out, fmt.Sprintf("policies.%s.extends: none: the policy leaves out every rule of the built-in policy (toolgate config defaults lists them)", name))
		}
		for _, r := range l.removed {
			if r.list == categoriesPath {
				out = append(out, fmt.Sprintf("%s: turns off the built-in category %s", r.field, r.rule))
				continue
			}
			out = append(out, fmt.Sprintf("%s: removes the built-in %s rule %s", r.field, r.list, r.rule))
		}
		base, _ := builtin()
		for i, from := range l.categories {
			if !strings.HasSuffix(from, replacesBuiltin) {
				continue
			}
			own := c.Policies[name].AutoMode.Categories[i]
			w := fmt.Sprintf("policies.%s.auto_mode.categories: %s replaces the built-in category of that name", name, own.Name)
			if j := slices.IndexFunc(base.AutoMode.Categories, func(b policy.Category) bool { return b.Name == own.Name }); j >= 0 && base.AutoMode.Categories[j].Kind != own.Kind {
				w += fmt.Sprintf(", and changes its kind from %s to %s", base.AutoMode.Categories[j].Kind, own.Kind)
			}
			out = append(out, w)
		}
	}
	return out
}

// layerComment describes a policy's layers for config show.
func (l *layers) comment() string {
	var b strings.Builder
	if l.extendsNone {
		b.WriteString("extends: none: no rule of the built-in policy applies; layers: ")
	} else {
		b.WriteString("layers: ")
	}
	for i, s := range l.sources {
		if i > 0 {
			b.WriteString(", then ")
		}
		if s == originBuiltin {
			b.WriteString("built-in (toolgate config defaults)")
		} else {
			b.WriteString(s)
		}
	}
	b.WriteString("; each rule says where it came from")
	if len(l.removed) > 0 {
		fmt.Fprintf(&b, "; remove_builtin drops %d built-in rule(s)", len(l.removed))
	}
	return b.String()
}
