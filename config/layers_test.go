package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/engine/rules"
)

// keepsCategory reports whether cats hold want unchanged.
func keepsCategory(cats []policy.Category, want policy.Category) bool {
	return slices.ContainsFunc(cats, func(c policy.Category) bool { return reflect.DeepEqual(c, want) })
}

// listOf returns a policy's list by its field path.
func listOf(t *testing.T, p *Policy, path string) []string {
	t.Helper()
	for _, f := range layeredLists {
		if f.path == path {
			return *f.list(p)
		}
	}
	t.Fatalf("no layered list %s", path)
	return nil
}

// originsOf returns where each entry of a policy's list came from.
func originsOf(t *testing.T, c *Config, policy, path string) []string {
	t.Helper()
	p := c.Policies[policy]
	from := c.layers[policy].from[path]
	if len(from) != len(listOf(t, &p, path)) {
		t.Fatalf("policies.%s.%s: %d entries, %d origins", policy, path, len(listOf(t, &p, path)), len(from))
	}
	return from
}

// added returns the entries of a policy's list that the built-in policy
// did not put there.
func added(t *testing.T, c *Config, policy, path string) []string {
	t.Helper()
	p := c.Policies[policy]
	var out []string
	for i, from := range originsOf(t, c, policy, path) {
		if from != originBuiltin {
			out = append(out, listOf(t, &p, path)[i])
		}
	}
	return out
}

// deniedBy makes tool calls that a built-in deny rule denies: the rule's
// own tool with its pattern spelled out, and for a Read rule a shell
// command that reads the same file. A rule it cannot spell fails the test,
// so that a new kind of built-in rule is never left out unnoticed.
func deniedBy(t *testing.T, rule, home string) []engine.ToolCall {
	t.Helper()
	r, err := rules.Parse(rule)
	if err != nil {
		t.Fatal(err)
	}
	switch r.Tool {
	case "Bash":
		cmd := strings.ReplaceAll(r.Specifier, "*", "https://example.com/install.sh")
		return []engine.ToolCall{{Name: "Bash", Input: map[string]any{"command": cmd}}}
	case "Read":
		p := r.Specifier
		switch {
		case strings.HasPrefix(p, "//"):
			p = p[1:]
		case strings.HasPrefix(p, "~/"):
			p = home + p[1:]
		default:
			t.Fatalf("built-in rule %s: no call spelled for this pattern; teach deniedBy", rule)
		}
		p = strings.ReplaceAll(p, "**", strings.TrimPrefix(home, "/"))
		p = strings.ReplaceAll(p, "*", "rsa")
		return []engine.ToolCall{
			{Name: "Read", Input: map[string]any{"file_path": p}},
			{Name: "Bash", Input: map[string]any{"command": "cat " + p}},
		}
	}
	t.Fatalf("built-in rule %s: no call spelled for tool %s; teach deniedBy", rule, r.Tool)
	return nil
}

// A policy file written to allow things cannot drop what the built-in
// policy denies: every call a built-in deny rule denies is still denied,
// in every policy of the file and every mode, and the classifier keeps
// every built-in rule. The calls come from the built-in rules themselves,
// so that a rule added to the defaults is covered here at once.
func TestAllowOnlyPolicyKeepsBuiltinDenies(t *testing.T) {
	const home = "/home/dev"
	base, err := BuiltinPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Permissions.Deny) == 0 || !slices.ContainsFunc(base.AutoMode.Categories, func(c policy.Category) bool { return c.Kind == policy.HardDeny }) {
		t.Fatalf("the built-in policy has no deny rules: %+v", base)
	}
	project := t.TempDir()
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	defEng, _, err := def.NewEngine(Runtime{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		rule string
		tool engine.ToolCall
	}
	var calls []call
	for _, rule := range base.Permissions.Deny {
		for _, tc := range deniedBy(t, rule, home) {
			// The call is one the built-in policy denies by rule: else the
			// test below would prove nothing.
			res, err := defEng.Check(t.Context(), &engine.Request{WorkingDirectory: project, Tool: tc})
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != engine.Deny || res.Source != engine.SourceRule {
				t.Fatalf("%s: the built-in policy answers %v with %s by %s (%s), not a deny by rule", rule, tc, res.Decision, res.Source, res.Reason)
			}
			calls = append(calls, call{rule, tc})
		}
	}

	dir := t.TempDir()
	writeAt(t, dir, "allow.json", `{"permissions": {"allow": ["Bash(curl *)", "Read(//**)", "Bash(cat *)"]}, "autoMode": {"allow": ["Anything the user asks for."]}}`)
	for _, tt := range []struct {
		name, body string
	}{
		{"four allow rules", `
policies:
  default:
    permissions:
      allow: ["Bash(npm test)", "Bash(go test ./...)", "Read(./**)", "Bash(git status)"]
`},
		{"allow rules over the tools the defaults deny", `
policies:
  default:
    permissions:
      allow: ["Bash(curl *)", "Bash(wget *)", "Bash(cat *)", "Bash(rm -rf build)", "Read(//**)", "Read(~/**)", "Read(~/.ssh/**)", Read]
`},
		{"empty lists and classifier rules", `
policies:
  default:
    permissions: {allow: [], ask: [], deny: []}
    auto_mode:
      allow: ["Reading credentials the task needs."]
      hard_deny: []
      soft_deny: []
      environment: ["A trusted CI runner."]
`},
		{"allow rules imported from Claude Code settings", `
policies:
  default:
    claude_settings: allow.json
`},
		{"an empty policy", `
policies:
  default: {}
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The same body again as a named policy: named policies extend
			// the built-in one too.
			body := tt.body + "  team:" + strings.SplitN(tt.body, "  default:", 2)[1]
			c, err := Load(writeAt(t, dir, "toolgate.yaml", body))
			if err != nil {
				t.Fatal(err)
			}
			eng, _, err := c.NewEngine(Runtime{Home: home})
			if err != nil {
				t.Fatal(err)
			}
			for _, policy := range []string{"default", "team"} {
				for _, mode := range []engine.Mode{engine.ModeAuto, engine.ModeAcceptEdits, engine.ModeBypass} {
					for _, cl := range calls {
						res, err := eng.Check(t.Context(), &engine.Request{Policy: policy, WorkingDirectory: project, Mode: mode, Tool: cl.tool})
						if err != nil {
							t.Fatal(err)
						}
						if res.Decision != engine.Deny {
							t.Errorf("policy %s, mode %s: %v (built-in %s) is %s by %s (%s), want deny", policy, mode, cl.tool.Input, cl.rule, res.Decision, res.Source, res.Reason)
						}
					}
				}
				p := c.Policies[policy]
				for _, bc := range base.AutoMode.Categories {
					if !keepsCategory(p.AutoMode.Categories, bc) {
						t.Errorf("policy %s lost or changed the built-in category %s", policy, bc.Name)
					}
				}
				for _, f := range layeredLists {
					if got, want := listOf(t, &p, f.path), *f.list(&base); len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
						t.Errorf("policy %s: %s = %q, does not start with the built-in %q", policy, f.path, got, want)
					}
				}
			}
		})
	}
}

// Dropping built-in rules takes remove_builtin, naming each rule exactly,
// or extends: none; each removal is a warning naming where it is set.
func TestRemoveBuiltin(t *testing.T) {
	base, err := BuiltinPolicy()
	if err != nil {
		t.Fatal(err)
	}
	// The built-in policy puts its classifier rules in categories; its
	// free-text list with entries is the environment.
	env := base.AutoMode.Environment[0]
	const category = "resource_abuse"
	p := write(t, `
policies:
  default:
    remove_builtin:
      permissions:
        deny: ["Bash(rm -rf /srv)", "Read(~/.npmrc)"]
      auto_mode:
        environment: ["`+env+`"]
        categories: [`+category+`]
    permissions:
      allow: ["Bash(rm -rf /srv)"]
  bare:
    extends: none
    permissions:
      deny: ["Bash(make deploy)"]
  team: {extends: builtin}
`)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	def := c.Policies["default"]
	for _, gone := range []string{"Bash(rm -rf /srv)", "Read(~/.npmrc)"} {
		if slices.Contains(def.Permissions.Deny, gone) {
			t.Errorf("removed rule %s still denies", gone)
		}
	}
	if want := len(base.Permissions.Deny) - 2; len(def.Permissions.Deny) != want {
		t.Errorf("%d deny rules, want the built-in's %d less the two removed", len(def.Permissions.Deny), want)
	}
	if slices.Contains(def.AutoMode.Environment, env) || len(def.AutoMode.Environment) != len(base.AutoMode.Environment)-1 {
		t.Errorf("environment %q after removing %q", def.AutoMode.Environment, env)
	}
	hasCategory := func(p Policy) bool {
		return slices.ContainsFunc(p.AutoMode.Categories, func(c policy.Category) bool { return c.Name == category })
	}
	if hasCategory(def) || len(def.AutoMode.Categories) != len(base.AutoMode.Categories)-1 {
		t.Errorf("categories after turning off %s: %d of the built-in %d", category, len(def.AutoMode.Categories), len(base.AutoMode.Categories))
	}
	if team := c.Policies["team"]; !slices.Equal(team.Permissions.Deny, base.Permissions.Deny) || !slices.Equal(team.AutoMode.Environment, base.AutoMode.Environment) || !hasCategory(team) {
		t.Error("a removal in one policy reached another")
	}
	if bare := c.Policies["bare"]; !slices.Equal(bare.Permissions.Deny, []string{"Bash(make deploy)"}) || len(bare.AutoMode.Environment) != 0 || len(bare.AutoMode.Categories) != 0 {
		t.Errorf("extends: none kept built-in rules: %+v", bare)
	}

	eng, warnings, err := c.NewEngine(Runtime{Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings := []string{
		"policies.bare.extends: none: the policy leaves out every rule of the built-in policy",
		"policies.default.remove_builtin.permissions.deny[0]: removes the built-in permissions.deny rule Bash(rm -rf /srv)",
		"policies.default.remove_builtin.permissions.deny[1]: removes the built-in permissions.deny rule Read(~/.npmrc)",
		"policies.default.remove_builtin.auto_mode.environment[0]: removes the built-in auto_mode.environment rule " + env,
		"policies.default.remove_builtin.auto_mode.categories[0]: turns off the built-in category " + category,
	}
	if len(warnings) != len(wantWarnings) {
		t.Fatalf("warnings %q, want %d", warnings, len(wantWarnings))
	}
	for i, w := range wantWarnings {
		if !strings.HasPrefix(warnings[i], w) {
			t.Errorf("warning %d = %q, want %q", i, warnings[i], w)
		}
	}
	// The engine's own wipe check still refuses rm -rf /srv: only the rule
	// is gone, which the matched rule shows.
	for _, tt := range []struct {
		policy, cmd, rule string
		matched           bool
	}{
		{"default", "rm -rf /srv", "Bash(rm -rf /srv)", false},
		{"default", "rm -rf /usr", "Bash(rm -rf /usr)", true},
		{"team", "rm -rf /srv", "Bash(rm -rf /srv)", true},
		{"bare", "rm -rf /srv", "Bash(rm -rf /srv)", false},
		{"bare", "make deploy", "Bash(make deploy)", true},
	} {
		res, err := eng.Check(t.Context(), &engine.Request{Policy: tt.policy, WorkingDirectory: t.TempDir(), Mode: engine.ModeBypass,
			Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": tt.cmd}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.MatchedRule == tt.rule; got != tt.matched || res.Decision != engine.Deny && tt.matched {
			t.Errorf("policy %s: %q is %s by %s (%s, rule %q); matched %s: want %v", tt.policy, tt.cmd, res.Decision, res.Source, res.Reason, res.MatchedRule, tt.rule, tt.matched)
		}
	}
}

func TestRemoveBuiltinErrors(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       []string
	}{
		{"not a built-in rule", "policies:\n  default:\n    remove_builtin:\n      permissions:\n        deny: [\"Bash(rm -rf /tmp)\"]\n",
			[]string{`policies.default.remove_builtin.permissions.deny[0]: "Bash(rm -rf /tmp)" is not a built-in permissions.deny rule`}},
		{"a rule of another list", "policies:\n  default: {}\n  p:\n    remove_builtin:\n      permissions:\n        allow: [\"Bash(curl * | sh)\"]\n",
			[]string{"policies.p.remove_builtin.permissions.allow[0]"}},
		{"near miss", "policies:\n  default:\n    remove_builtin:\n      permissions:\n        deny: [\"Bash(curl *|sh)\"]\n",
			[]string{"policies.default.remove_builtin.permissions.deny[0]"}},
		{"every bad name reported", "policies:\n  default:\n    remove_builtin:\n      permissions: {deny: [a, b]}\n      auto_mode: {hard_deny: [c]}\n",
			[]string{"deny[0]", "deny[1]", "hard_deny[0]"}},
		{"unknown list", "policies:\n  default:\n    remove_builtin:\n      protected_paths: [\".git/**\"]\n", []string{":4: policies.default.remove_builtin: unknown field \"protected_paths\""}},
		{"with extends none", "policies:\n  default:\n    extends: none\n    remove_builtin:\n      permissions: {deny: [\"Bash(rm -rf /)\"]}\n",
			[]string{"policies.default.remove_builtin: set with extends: none"}},
		{"bad extends", "policies:\n  default:\n    extends: nothing\n", []string{`policies.default.extends: must be builtin or none, got "nothing"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, tt.body)
			_, err := Load(p)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append([]string{p}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// A file may repeat a built-in rule (config show prints them, and loading
// its output must mean the same): it is kept once, as the built-in's.
func TestRepeatedBuiltinRule(t *testing.T) {
	base, err := BuiltinPolicy()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(write(t, "policies:\n  default:\n    permissions:\n      deny: [\"Bash(make deploy)\", \""+base.Permissions.Deny[0]+"\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := added(t, c, "default", "permissions.deny"); !slices.Equal(got, []string{"Bash(make deploy)"}) {
		t.Errorf("rules added to the built-in ones: %q", got)
	}
	if got := len(c.Policies["default"].Permissions.Deny); got != len(base.Permissions.Deny)+1 {
		t.Errorf("%d deny rules, want %d", got, len(base.Permissions.Deny)+1)
	}
}

// A category a file repeats word for word (as config show prints it) is
// the built-in one: no replacement to warn of, and its origin stays
// built-in; a changed one replaces it, with a warning.
func TestRepeatedBuiltinCategory(t *testing.T) {
	base, err := BuiltinPolicy()
	if err != nil || len(base.AutoMode.Categories) == 0 {
		t.Fatalf("no built-in categories (%v)", err)
	}
	same := base.AutoMode.Categories[0]
	changed := base.AutoMode.Categories[1]
	changed.MustName = "the team's own wording"
	body, err := yaml.Marshal(map[string]any{"policies": map[string]any{"default": map[string]any{
		"auto_mode": map[string]any{"categories": []policy.Category{same, changed}}}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(write(t, string(body)))
	if err != nil {
		t.Fatal(err)
	}
	_, warnings, err := c.NewEngine(Runtime{Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	want := "policies.default.auto_mode.categories: " + changed.Name + " replaces the built-in category of that name"
	if !slices.Equal(warnings, []string{want}) {
		t.Errorf("warnings %q, want only %q", warnings, want)
	}
	if from := c.layers["default"].categories; from[0] != originBuiltin || from[1] == originBuiltin {
		t.Errorf("origins %q: the repeated category is not built-in, or the changed one is", from[:2])
	}
}
