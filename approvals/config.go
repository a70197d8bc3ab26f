package approvals

import (
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/approvals/webhook"
)

// Config is a central toolgate's approvals section: where approvals are
// stored (the store's fields, inline), the learned rules' lives, and the
// webhook that announces each new pending approval.
type Config struct {
	store.Config `yaml:",inline"`
	// RuleTTL is a learned rule's life when the approver does not say;
	// MaxRuleTTL is the most an approver may give.
	RuleTTL    time.Duration `yaml:"rule_ttl"`
	MaxRuleTTL time.Duration `yaml:"max_rule_ttl"`
	// MaxPending caps the approvals pending at once, and
	// MaxPendingPerOrigin those from one local server or client: a
	// question past either is denied (approval_unavailable).
	MaxPending          int `yaml:"max_pending"`
	MaxPendingPerOrigin int `yaml:"max_pending_per_origin"`
	// Retention is how long decision records, settled approvals and
	// expired rules are kept.
	Retention time.Duration `yaml:"retention"`
	// Webhook announces each new pending approval (Slack-compatible).
	Webhook webhook.Config `yaml:"webhook"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Config: store.DefaultConfig(), RuleTTL: DefaultRuleTTL, MaxRuleTTL: MaxRuleTTL, Retention: 30 * 24 * time.Hour, MaxPending: DefaultMaxPending, MaxPendingPerOrigin: DefaultMaxPendingPerOrigin, Webhook: webhook.DefaultConfig()}
}

// Validate reports every bad field, named by its path.
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate(), c.Webhook.Validate()}
	if c.MaxRuleTTL < time.Minute || c.MaxRuleTTL > 90*24*time.Hour {
		errs = append(errs, fmt.Errorf("approvals.max_rule_ttl: must be between 1m and 90 days, got %s", c.MaxRuleTTL))
	}
	if c.RuleTTL < time.Minute || c.RuleTTL > c.MaxRuleTTL {
		errs = append(errs, fmt.Errorf("approvals.rule_ttl: must be between 1m and max_rule_ttl (%s), got %s", c.MaxRuleTTL, c.RuleTTL))
	}
	if c.MaxPending < 1 || c.MaxPending > 1_000_000 {
		errs = append(errs, fmt.Errorf("approvals.max_pending: must be between 1 and 1000000, got %d", c.MaxPending))
	}
	if c.MaxPendingPerOrigin < 1 || c.MaxPendingPerOrigin > c.MaxPending {
		errs = append(errs, fmt.Errorf("approvals.max_pending_per_origin: must be between 1 and max_pending (%d), got %d", c.MaxPending, c.MaxPendingPerOrigin))
	}
	if c.Retention < time.Hour {
		errs = append(errs, fmt.Errorf("approvals.retention: must be at least 1h, got %s", c.Retention))
	}
	return errors.Join(errs...)
}
