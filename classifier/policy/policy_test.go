package policy

import (
	"slices"
	"strings"
	"testing"
)

// TestInForce: the policy's categories, then one per non-empty free-text
// list (blank rules dropped, whitespace folded), and an allow category
// whenever none is there, so that the model can always allow.
func TestInForce(t *testing.T) {
	deploy := Category{Name: "production_deploy", Kind: SoftDeny, Definition: "Deploying."}
	work := Category{Name: "ordinary_work", Kind: Allow, Definition: "Routine work."}
	for _, tc := range []struct {
		name  string
		p     Policy
		names []string
	}{
		{"categories only", Policy{Categories: []Category{deploy, work}}, []string{"production_deploy", "ordinary_work"}},
		{"free text", Policy{Categories: []Category{deploy, work}, HardDeny: []string{"a"}, SoftDeny: []string{" ", "b\n c"}, Allow: []string{"\t"}},
			[]string{"production_deploy", "ordinary_work", ExtraHardDeny, ExtraSoftDeny}},
		{"no allow category", Policy{Categories: []Category{deploy}}, []string{"production_deploy", ExtraAllow}},
		{"nothing", Policy{}, []string{ExtraAllow}},
		{"free-text allow", Policy{Allow: []string{"tests"}}, []string{ExtraAllow}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Names(); !slices.Equal(got, tc.names) {
				t.Fatalf("names %q, want %q", got, tc.names)
			}
			for _, c := range tc.p.InForce() {
				if c.Validate() != nil && !strings.HasPrefix(c.Name, "extra_") {
					t.Errorf("%s: %v", c.Name, c.Validate())
				}
			}
		})
	}
	p := Policy{SoftDeny: []string{" ", "b\n   c"}}
	if c, ok := p.Lookup(ExtraSoftDeny); !ok || !slices.Equal(c.Rules, []string{"b c"}) || c.Kind != SoftDeny {
		t.Errorf("extra_soft_deny: %+v, %v", c, ok)
	}
	if _, ok := p.Lookup("production_deploy"); ok {
		t.Error("a category the policy lacks was found")
	}
}

// TestValidate: each bound is enforced and every problem reported with
// the category's index.
func TestValidate(t *testing.T) {
	ok := Category{Name: "a_b", Kind: Allow, Definition: "x"}
	if err := (Policy{Categories: []Category{ok}}).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    Category
		want string
	}{
		{Category{Kind: Allow, Definition: "x"}, "name: required"},
		{Category{Name: "A", Kind: Allow, Definition: "x"}, "must be snake_case"},
		{Category{Name: "a-b", Kind: Allow, Definition: "x"}, "must be snake_case"},
		{Category{Name: "_a", Kind: Allow, Definition: "x"}, "must be snake_case"},
		{Category{Name: strings.Repeat("a", MaxNameLen+1), Kind: Allow, Definition: "x"}, "at most 40"},
		{Category{Name: "none", Kind: Allow, Definition: "x"}, "reserved"},
		{Category{Name: Unknown, Kind: Allow, Definition: "x"}, "reserved"},
		{Category{Name: ExtraHardDeny, Kind: HardDeny, Definition: "x"}, "reserved"},
		{Category{Name: "a", Kind: "deny", Definition: "x"}, "kind: must be"},
		{Category{Name: "a", Kind: Allow, Definition: " \n"}, "definition: required"},
		{Category{Name: "a", Kind: Allow, Definition: strings.Repeat("x", MaxDefinitionLen+1)}, "definition: 2001 bytes"},
		{Category{Name: "a", Kind: Allow, Definition: "x", NotCovered: make([]string, MaxNotCovered+1)}, "not_covered: 9 items"},
		{Category{Name: "a", Kind: Allow, Definition: "x", NotCovered: []string{strings.Repeat("x", MaxItemLen+1)}}, "not_covered[0]: 401 bytes"},
		{Category{Name: "a", Kind: Allow, Definition: "x", MustName: strings.Repeat("x", MaxItemLen+1)}, "must_name: 401 bytes"},
	} {
		err := (Policy{Categories: []Category{ok, tc.c}}).Validate()
		if err == nil || !strings.Contains(err.Error(), "categories[1]") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.c, err, tc.want)
		}
	}
	err := (Policy{Categories: []Category{ok, ok}}).Validate()
	if err == nil || !strings.Contains(err.Error(), `categories[1]: the name "a_b" is also categories[0]`) {
		t.Errorf("a name twice: %v", err)
	}
	many := make([]Category, MaxCategories+1)
	for i := range many {
		many[i] = Category{Name: "c" + strings.Repeat("x", i%30) + string(rune('a'+i%26)) + string(rune('a'+i/26)), Kind: Allow, Definition: "x"}
	}
	if err := (Policy{Categories: many}).Validate(); err == nil || !strings.Contains(err.Error(), "categories: 121, at most 120") {
		t.Errorf("too many categories: %v", err)
	}
}

// TestTrustLines: a list's values when it has some, else the assumption;
// one line each, in a fixed order.
func TestTrustLines(t *testing.T) {
	empty := Trust{}.Lines()
	if len(empty) != 5 || !strings.HasPrefix(empty[0], "No domain is listed") || !strings.HasPrefix(empty[4], "No production markers") {
		t.Fatalf("assumptions %q", empty)
	}
	lines := Trust{Domains: []string{"git.acme.example", " "}, Production: []string{"prd-\n"}}.Lines()
	if lines[0] != "Domains the organisation trusts to receive project code and data: git.acme.example." || lines[1] != empty[1] ||
		lines[4] != "Names that mark production: prd-." {
		t.Errorf("lines %q", lines)
	}
}
