package eval

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
)

// minCasesPerCategory is how many cases of the classifier corpus each
// category in force needs: one case says little about a category's
// wording, two at least show its block and the neighbour it must not take.
const minCasesPerCategory = 2

// neighbourRE reads the convention that ties an allow case to a deny
// category: a note that starts "deny_category_name: ..." says the case is
// a harmless neighbour that category must not take.
var neighbourRE = regexp.MustCompile(`^([a-z][a-z0-9_]*): `)

// checkCategories returns what is wrong with cases as the corpus of the
// policy p: a case's category not in force, or of the wrong kind for its
// label; a category in force (but the extra_* lists, which a policy
// fills in itself) with too few cases, or a deny category with no block
// case or no allowing neighbour.
func checkCategories(p policy.Policy, cases []Case) []string {
	var errs []string
	count := map[string]int{}
	blocked := map[string]bool{}
	neighbours := map[string]int{}
	for _, c := range cases {
		cat, ok := p.Lookup(c.Category)
		if !ok {
			errs = append(errs, fmt.Sprintf("%s %s: category %q is not a category of the policy", c.ID, c.Where, c.Category))
			continue
		}
		count[cat.Name]++
		switch c.Expect {
		case ExpectBlock:
			if !cat.Kind.Blocks() {
				errs = append(errs, fmt.Sprintf("%s %s: a block case names %s, an %s category", c.ID, c.Where, cat.Name, cat.Kind))
			}
			blocked[cat.Name] = true
		case ExpectAllow:
			if cat.Kind.Blocks() {
				errs = append(errs, fmt.Sprintf("%s %s: an allow case names %s, a %s category", c.ID, c.Where, cat.Name, cat.Kind))
			}
			m := neighbourRE.FindStringSubmatch(c.Note)
			if m == nil {
				break
			}
			d, ok := p.Lookup(m[1])
			switch {
			case ok && d.Kind.Blocks():
				neighbours[d.Name]++
			case ok || strings.Contains(m[1], "_"):
				// A misspelt or allow name would quietly tie the case to
				// nothing; a plain word ("build: ...") is a theme.
				errs = append(errs, fmt.Sprintf("%s %s: the note starts %q, not a deny category of the policy", c.ID, c.Where, m[1]+": "))
			}
		}
	}
	for _, cat := range p.InForce() {
		if strings.HasPrefix(cat.Name, "extra_") {
			continue
		}
		if count[cat.Name] < minCasesPerCategory {
			errs = append(errs, fmt.Sprintf("category %s (%s): %d cases, want at least %d", cat.Name, cat.Kind, count[cat.Name], minCasesPerCategory))
		}
		if !cat.Kind.Blocks() {
			continue
		}
		if !blocked[cat.Name] {
			errs = append(errs, fmt.Sprintf("category %s (%s): no block case", cat.Name, cat.Kind))
		}
		if neighbours[cat.Name] == 0 {
			errs = append(errs, fmt.Sprintf("category %s (%s): no allowing neighbour (an allow case whose note starts %q)", cat.Name, cat.Kind, cat.Name+": "))
		}
	}
	return errs
}

func classifierCorpus(t *testing.T) []Case {
	t.Helper()
	paths, err := filepath.Glob("../testdata/corpus/classifier/*.jsonl")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no classifier corpus files: %v", err)
	}
	cases, err := Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

func defaultClassifierPolicy(t *testing.T) policy.Policy {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cfg.Policies[engine.DefaultPolicy]
	if !ok {
		t.Fatalf("the embedded config has no %q policy", engine.DefaultPolicy)
	}
	return p.AutoMode.Classifier()
}

// TestCorpusCategories: every case of the classifier corpus names the
// default policy's category that decides it, and every category of the
// default policy has its cases, so that eval's confusion by category
// covers the whole policy and a category added without cases is noticed.
func TestCorpusCategories(t *testing.T) {
	p := defaultClassifierPolicy(t)
	cases := classifierCorpus(t)
	for _, e := range checkCategories(p, cases) {
		t.Error(e)
	}
	t.Logf("%d cases over %d categories", len(cases), len(p.InForce()))
}

// TestCheckCategories: the check itself fails on each thing it looks
// for, the policy's own categories taken as they are on main.
func TestCheckCategories(t *testing.T) {
	p := defaultClassifierPolicy(t)
	cases := classifierCorpus(t)
	deny := func() policy.Category {
		for _, c := range p.InForce() {
			if c.Kind == policy.SoftDeny && !strings.HasPrefix(c.Name, "extra_") {
				return c
			}
		}
		t.Fatal("the default policy has no soft_deny category")
		return policy.Category{}
	}()
	allow := func() policy.Category {
		for _, c := range p.InForce() {
			if c.Kind == policy.Allow && !strings.HasPrefix(c.Name, "extra_") {
				return c
			}
		}
		t.Fatal("the default policy has no allow category")
		return policy.Category{}
	}()
	edit := func(f func(*Case) bool) []Case {
		out := slices.Clone(cases)
		for i := range out {
			if f(&out[i]) {
				return out
			}
		}
		t.Fatal("no case to edit")
		return nil
	}
	tests := []struct {
		name  string
		p     policy.Policy
		cases []Case
		want  string
	}{
		{"a category added without cases", func() policy.Policy {
			q := p
			q.Categories = append(slices.Clone(p.Categories), policy.Category{Name: "new_category", Kind: policy.SoftDeny, Definition: "x"})
			return q
		}(), cases, "category new_category (soft_deny): 0 cases"},
		{"an allow category added without cases", func() policy.Policy {
			q := p
			q.Categories = append(slices.Clone(p.Categories), policy.Category{Name: "new_allow", Kind: policy.Allow, Definition: "x"})
			return q
		}(), cases, "category new_allow (allow): 0 cases"},
		{"a category no policy has", p, edit(func(c *Case) bool { c.Category = "no_such_category"; return true }), `category "no_such_category" is not a category`},
		{"a case with no category", p, edit(func(c *Case) bool { c.Category = ""; return true }), `category "" is not a category`},
		{"a block case naming an allow category", p, edit(func(c *Case) bool {
			if c.Expect != ExpectBlock {
				return false
			}
			c.Category = allow.Name
			return true
		}), "a block case names " + allow.Name},
		{"an allow case naming a deny category", p, edit(func(c *Case) bool {
			if c.Expect != ExpectAllow {
				return false
			}
			c.Category = deny.Name
			return true
		}), "an allow case names " + deny.Name},
		{"a deny category without a block case", p, func() []Case {
			var out []Case
			for _, c := range cases {
				if c.Category != deny.Name || c.Expect != ExpectBlock {
					out = append(out, c)
				}
			}
			return out
		}(), "category " + deny.Name + " (soft_deny): no block case"},
		{"a deny category without an allowing neighbour", p, func() []Case {
			out := slices.Clone(cases)
			for i := range out {
				out[i].Note = strings.TrimPrefix(out[i].Note, deny.Name+": ")
			}
			return out
		}(), "category " + deny.Name + " (soft_deny): no allowing neighbour"},
		{"a neighbour's note naming no deny category", p, edit(func(c *Case) bool {
			if c.Expect != ExpectAllow {
				return false
			}
			c.Note = "credential_exposur: a typo"
			return true
		}), `the note starts "credential_exposur: "`},
	}
	if errs := checkCategories(p, cases); len(errs) > 0 {
		t.Fatalf("the corpus itself fails the check: %v", errs)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := checkCategories(tt.p, tt.cases)
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tt.want) }) {
				t.Errorf("errors %q, want one containing %q", errs, tt.want)
			}
		})
	}
}
