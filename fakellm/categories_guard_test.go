package fakellm

import "testing"

// TestDefaultAllowCategoryIsAnAllow: an allowing Reply without a category
// never names a deny category, even when the policy has free-text deny
// rules and allow categories of its own, so that the enum ends in
// extra_soft_deny.
func TestDefaultAllowCategoryIsAnAllow(t *testing.T) {
	enum := []string{"customer_data_export", "team_tooling", "extra_soft_deny"} // team_tooling is the policy's allow category
	if got := categoryOf(Reply{}, enum); got == "extra_soft_deny" {
		t.Fatalf("an allow names %s, a deny category", got)
	}
}
