package classifier

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/fakellm"
)

// TestCategorySlipKeepsBreakerClosed: a model that allows while naming
// the soft-deny category it weighed (a slip a real model can make, and one
// an agent can invite with text in its tool input) fails that check
// closed, but the answer is the model's judgement, not the backend's
// fault: it never counts against the breaker, so the classifier stays
// available to every other session.
func TestCategorySlipKeepsBreakerClosed(t *testing.T) {
	slip := fakellm.Reply{Category: "production_deploy"} // allow, naming a soft deny
	replies := []fakellm.Reply{slip, slip, slip, slip, slip, slip, {Category: "ordinary_work"}}
	c, _ := categoryClassifier(t, APIChat, fakellm.Sequence(replies...), false)
	for i := range len(replies) - 1 {
		v, err := c.Classify(t.Context(), input("Bash", fmt.Sprintf("make deploy-%d", i), fmt.Sprintf("s%d", i)))
		if err == nil || v.Decision == engine.Allow {
			t.Fatalf("slip %d: %+v, %v; want a failure", i, v, err)
		}
	}
	v, err := c.Classify(t.Context(), input("Bash", "make test", "other-session"))
	if errors.Is(err, ErrNoBackend) {
		t.Fatalf("after %d allows naming a soft-deny category, the healthy backend's breaker is open for every session: %v", len(replies)-1, err)
	}
	if err != nil || v.Decision != engine.Allow {
		t.Fatalf("got %+v, %v; want the model's allow", v, err)
	}
}

// TestPolicySizeBounded: each category is bounded, and so is the whole
// (policy.MaxPolicyBytes): a policy within every per-category limit, or
// with one 1 MiB free-text rule, is refused rather than sent on every
// call as a prompt past a model's context.
func TestPolicySizeBounded(t *testing.T) {
	const capBytes = 128 << 10
	long := func(n int, c byte) string { return strings.Repeat(string(c), n-1) + "." }
	var r Rules
	for i := range policy.MaxCategories {
		c := policy.Category{Name: fmt.Sprintf("cat_%03d", i), Kind: policy.SoftDeny, Definition: long(policy.MaxDefinitionLen, 'd'), MustName: long(policy.MaxItemLen, 'm')}
		for range policy.MaxNotCovered {
			c.NotCovered = append(c.NotCovered, long(policy.MaxItemLen, 'n'))
		}
		r.Categories = append(r.Categories, c)
	}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at most %d", capBytes)) {
		t.Errorf("a policy within every per-category limit, %d bytes of prompt: %v", len(compileInstructions(r).system), err)
	}
	if _, err := New(testConfig("http://127.0.0.1:1/v1"), map[string]Rules{"big": r}, nil); err == nil || !strings.Contains(err.Error(), "policies.big.auto_mode") {
		t.Errorf("the classifier took the policy: %v", err)
	}
	r = Rules{SoftDeny: []string{long(1<<20, 's')}}
	if err := r.Validate(); err == nil {
		t.Errorf("a 1 MiB free-text soft_deny rule validates and makes a %d-byte system prompt", len(compileInstructions(r).system))
	}
	// The built-in policy is well within it.
	rules, _ := defaultRules(t)
	if err := rules["default"].Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestBlockInAllowCategoryIsUnknown: a block that names an allow category
// blocks, and is recorded as unknown (kind empty): a deny's category is
// the deny category it falls under, as the response, the decision log and
// the metric say.
func TestBlockInAllowCategoryIsUnknown(t *testing.T) {
	c, _ := categoryClassifier(t, APIChat, fakellm.Always(fakellm.Reply{Block: true, Category: "ordinary_work"}), false)
	v, err := c.Classify(t.Context(), input("Bash", "make deploy", ""))
	if err != nil || v.Decision != engine.Deny {
		t.Fatalf("got %+v, %v; want a deny", v, err)
	}
	if v.Details.CategoryKind == string(policy.Allow) {
		t.Fatalf("a deny recorded in the allow category %s (kind %s)", v.Details.Category, v.Details.CategoryKind)
	}
}
