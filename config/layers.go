package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

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
		}
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
		c.Policies[name] = p
	}
	return errors.Join(errs...)
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
			out = append(out, fmt.Sprintf("%s: removes the built-in %s rule %s", r.field, r.list, r.rule))
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
