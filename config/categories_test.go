package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/classifier/policy"
)

// builtinCategories are the built-in policy's categories; the tests
// below need a hard deny, a soft deny and an allow one among them.
func builtinCategories(t *testing.T) (hard, soft, allow policy.Category) {
	t.Helper()
	p, err := BuiltinPolicy()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.AutoMode.Categories {
		switch {
		case c.Kind == policy.HardDeny && hard.Name == "":
			hard = c
		case c.Kind == policy.SoftDeny && soft.Name == "":
			soft = c
		case c.Kind == policy.Allow && allow.Name == "":
			allow = c
		}
	}
	if hard.Name == "" || soft.Name == "" || allow.Name == "" {
		t.Fatalf("the built-in policy lacks a category of some kind: %d categories", len(p.AutoMode.Categories))
	}
	return hard, soft, allow
}

func names(cs []policy.Category) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// TestCategoriesLayer: a policy turns a built-in category off by naming
// it in remove_builtin, tightens one by giving a category of its name,
// and adds its own; the rest of the built-in ones stay, in their order;
// validate reports the removal and the replacement, and config show marks
// each category with where it came from.
func TestCategoriesLayer(t *testing.T) {
	hard, soft, allow := builtinCategories(t)
	base, _ := BuiltinPolicy()
	c, err := loadBody(t, `
policies:
  default:
    remove_builtin:
      auto_mode:
        categories: [`+allow.Name+`]
    auto_mode:
      categories:
        - name: `+soft.Name+`
          kind: hard_deny
          definition: Tightened by the organisation.
        - name: customer_data_export
          kind: soft_deny
          definition: Exporting rows of the customers table anywhere.
          not_covered: [the anonymised fixtures in testdata/]
          must_name: the table and the destination
      trusted_domains: [git.corp.example]
  strict:
    extends: none
    auto_mode:
      soft_deny: [Anything that touches the network.]
`)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Policies["default"].AutoMode
	want := []string{}
	for _, b := range base.AutoMode.Categories {
		if b.Name != allow.Name {
			want = append(want, b.Name)
		}
	}
	want = append(want, "customer_data_export")
	if !slices.Equal(names(got.Categories), want) {
		t.Fatalf("categories %q, want %q", names(got.Categories), want)
	}
	i := slices.Index(names(got.Categories), soft.Name)
	if got.Categories[i].Kind != policy.HardDeny || got.Categories[i].Definition != "Tightened by the organisation." {
		t.Errorf("replaced category %+v", got.Categories[i])
	}
	if j := slices.Index(names(got.Categories), hard.Name); got.Categories[j].Definition != hard.Definition {
		t.Errorf("an untouched built-in category changed: %+v", got.Categories[j])
	}
	cls := got.Classifier()
	if _, ok := cls.Lookup(allow.Name); ok {
		t.Errorf("turned-off category %s still in force", allow.Name)
	}
	if k, ok := cls.Lookup("customer_data_export"); !ok || k.Kind != policy.SoftDeny || k.MustName != "the table and the destination" {
		t.Errorf("added category: %+v, %v", k, ok)
	}
	if !slices.Equal(cls.Trust.Domains, []string{"git.corp.example"}) {
		t.Errorf("trusted domains %q", cls.Trust.Domains)
	}
	// A policy that extends nothing has its free-text rules, and an allow
	// category so that the model can still allow.
	if n := c.Policies["strict"].AutoMode.Classifier().Names(); !slices.Equal(n, []string{policy.ExtraSoftDeny, policy.ExtraAllow}) {
		t.Errorf("extends none: categories in force %q", n)
	}

	warnings := strings.Join(c.layerWarnings(), "\n")
	for _, w := range []string{
		"policies.default.remove_builtin.auto_mode.categories[0]: turns off the built-in category " + allow.Name,
		"policies.default.auto_mode.categories: " + soft.Name + " replaces the built-in category of that name",
	} {
		if !strings.Contains(warnings, w) {
			t.Errorf("warnings lack %q:\n%s", w, warnings)
		}
	}

	out, err := c.MarshalShow()
	if err != nil {
		t.Fatal(err)
	}
	show := string(out)
	for _, line := range []string{
		"# the classifier is told of the environment:",
		"# - Domains the organisation trusts to receive project code and data: git.corp.example.",
		"# - No storage bucket is listed as trusted",
		"- name: " + hard.Name + " # " + originBuiltin,
		"- name: " + soft.Name + " # " + c.name + replacesBuiltin,
		"- name: customer_data_export # " + c.name,
	} {
		if !strings.Contains(show, line) {
			t.Errorf("config show lacks %q", line)
		}
	}
	if strings.Contains(show, "- name: "+allow.Name+" #") {
		t.Errorf("config show lists the turned-off category %s", allow.Name)
	}
	// A centre serves the categories in force, and a local server takes
	// them as they are.
	doc, _, err := c.Served()
	if err != nil {
		t.Fatal(err)
	}
	local, err := FromServed(doc, "centre")
	if err != nil {
		t.Fatal(err)
	}
	if lc := local.Policies["default"].AutoMode; !slices.Equal(names(lc.Categories), want) || !slices.Equal(lc.TrustedDomains, got.TrustedDomains) {
		t.Errorf("served categories %q, trusted domains %q", names(lc.Categories), lc.TrustedDomains)
	}
	// What show prints loads back to the same categories.
	again, err := loadBody(t, show)
	if err != nil {
		t.Fatalf("config show's output does not load: %v", err)
	}
	if !slices.Equal(names(again.Policies["default"].AutoMode.Categories), want) {
		t.Errorf("reloaded categories %q", names(again.Policies["default"].AutoMode.Categories))
	}
}

// TestCategoriesRefused: a category the classifier could not use is
// refused with its path, before anything runs.
func TestCategoriesRefused(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"bad name", "categories: [{name: Bad-Name, kind: soft_deny, definition: x}]", `policies.default.auto_mode.categories[0] ("Bad-Name"): name: `},
		{"reserved name", "categories: [{name: unknown, kind: allow, definition: x}]", `name: "unknown" is reserved`},
		{"free-text name", "categories: [{name: extra_allow, kind: allow, definition: x}]", `name: "extra_allow" is reserved`},
		{"bad kind", "categories: [{name: a_b, kind: maybe, definition: x}]", "kind: must be hard_deny, soft_deny or allow"},
		{"no definition", "categories: [{name: a_b, kind: allow}]", "definition: required"},
		{"twice", "categories: [{name: a_b, kind: allow, definition: x}, {name: a_b, kind: soft_deny, definition: y}]", `categories[1]: the name "a_b" is also categories[0]`},
		{"long name", "categories: [{name: " + strings.Repeat("a", 41) + ", kind: allow, definition: x}]", "at most 40 characters"},
		{"unknown field", "categories: [{name: a_b, kind: allow, definition: x, severity: high}]", "severity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadBody(t, "policies:\n  default:\n    auto_mode:\n      "+tc.body+"\n")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	_, err := loadBody(t, "policies:\n  default:\n    remove_builtin: {auto_mode: {categories: [no_such_category]}}\n")
	if err == nil || !strings.Contains(err.Error(), `remove_builtin.auto_mode.categories[0]: "no_such_category" is not a built-in category`) {
		t.Errorf("removing an unknown category: %v", err)
	}
}
