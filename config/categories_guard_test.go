package config

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/classifier/policy"
)

// TestRemovedThenRedefinedCategory: an operator turns a built-in category
// off in remove_builtin and gives a category of the same name (to
// redefine it from scratch, here under another kind): the file's category
// is in force.
func TestRemovedThenRedefinedCategory(t *testing.T) {
	_, soft, _ := builtinCategories(t)
	c, err := loadBody(t, `
policies:
  default:
    remove_builtin:
      auto_mode:
        categories: [`+soft.Name+`]
    auto_mode:
      categories:
        - name: `+soft.Name+`
          kind: hard_deny
          definition: The organisation's own, stricter definition.
`)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := c.Policies["default"].AutoMode.Classifier().Lookup(soft.Name)
	if !ok {
		t.Fatalf("the file's category %s is not in force: removed as a built-in and dropped as the file's own, with no warning", soft.Name)
	}
	if k.Kind != policy.HardDeny || k.Definition != "The organisation's own, stricter definition." {
		t.Fatalf("category %s in force is %+v, want the file's", soft.Name, k)
	}
}

// TestKindChangeWarned: a file's category of a built-in name replaces it
// whatever its kind, so an override can turn a hard deny into an allow;
// validate's warning says that the kind changed, from what to what.
func TestKindChangeWarned(t *testing.T) {
	hard, _, _ := builtinCategories(t)
	c, err := loadBody(t, `
policies:
  default:
    auto_mode:
      categories:
        - name: `+hard.Name+`
          kind: allow
          definition: Reading the team's shared test credentials.
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.layerWarnings() {
		if strings.Contains(w, hard.Name) && strings.Contains(w, string(policy.HardDeny)) && strings.Contains(w, string(policy.Allow)) {
			return
		}
	}
	t.Fatalf("a hard deny made an allow is warned of only as %q", c.layerWarnings())
}

// TestServedCategoryErrorIsSafe: a centre's served policy with a bad
// category is refused, and the refusal, which the local server logs,
// quotes the name: a newline or terminal escape in it never reaches the
// log raw.
func TestServedCategoryErrorIsSafe(t *testing.T) {
	_, err := FromServed([]byte("policies:\n  default:\n    auto_mode:\n      categories:\n        - {name: \"x\\n2026-11-28T03:00:00Z INFO fake line \\e[31m\", kind: allow, definition: d}\n"), "centre")
	if err == nil {
		t.Fatal("a served category with a bad name was taken")
	}
	if strings.ContainsAny(err.Error(), "\n\x1b") {
		t.Fatalf("the refusal echoes the centre's text raw: %q", err.Error())
	}
}
