package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/engine"
)

func loadBody(t *testing.T, body string) (*Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(path)
}

// TestUnattendedSetting: a policy's unattended.on_ask reaches its engine
// spec (deny unless it says ask); a value other than deny or ask is
// refused with its path, from a file and from a centre alike.
func TestUnattendedSetting(t *testing.T) {
	c, err := loadBody(t, "policies:\n  default: {}\n  ci:\n    unattended: {on_ask: deny}\n  sdk:\n    unattended: {on_ask: ask}\n")
	if err != nil {
		t.Fatal(err)
	}
	p := c.enginePolicies()
	for name, want := range map[string]engine.Decision{"default": engine.Deny, "ci": engine.Deny, "sdk": engine.Ask} {
		if got := p[name].Unattended.OnAsk; got != want {
			t.Errorf("%s: on_ask %s, want %s", name, got, want)
		}
	}
	for _, bad := range []string{"allow", "Deny", "yes"} {
		_, err := loadBody(t, "policies:\n  default: {}\n  ci:\n    unattended: {on_ask: "+bad+"}\n")
		if err == nil || !strings.Contains(err.Error(), `policies.ci.unattended.on_ask: must be deny, ask or approve, got "`+bad+`"`) {
			t.Errorf("on_ask %s: %v", bad, err)
		}
		_, err = FromServed([]byte("policies:\n  default: {}\n  ci:\n    unattended: {on_ask: "+bad+"}\n"), "upstream test")
		if err == nil || !strings.Contains(err.Error(), `upstream test: policies.ci.unattended.on_ask: must be deny, ask or approve`) {
			t.Errorf("served on_ask %s: %v", bad, err)
		}
	}
	if _, err := loadBody(t, "policies:\n  default:\n    unattended: {on_ask: deny, timeout: 5m}\n"); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("unknown field: %v", err)
	}
}

// TestUnattendedApproveSetting: on_ask: approve reaches the engine as an
// approval spec with its timeout, outcome and sources, defaults filled in
// by the engine; every bad value is refused with its path, and the
// approval settings are refused without approve (they would be ignored).
func TestUnattendedApproveSetting(t *testing.T) {
	c, err := loadBody(t, "policies:\n  default: {}\n  ci:\n    unattended: {on_ask: approve, approval_timeout: 15m, on_timeout: allow, approve_sources: [rule, no_classifier]}\n  plain:\n    unattended: {on_ask: approve}\n")
	if err != nil {
		t.Fatal(err)
	}
	p := c.enginePolicies()
	a := p["ci"].Unattended.Approval
	if a == nil || a.Timeout != 15*time.Minute || a.OnTimeout != engine.Allow || !slices.Equal(a.Sources, []engine.Source{engine.SourceRule, engine.SourceNoClassifier}) {
		t.Errorf("ci: approval spec %+v", a)
	}
	if a := p["plain"].Unattended.Approval; a == nil || a.OnTimeout != engine.Deny || len(a.Sources) != 0 {
		t.Errorf("plain: approval spec %+v", a)
	}
	if p["default"].Unattended.Approval != nil {
		t.Error("default: an approval spec without on_ask: approve")
	}
	for _, tc := range []struct{ body, want string }{
		{"{on_ask: approve, approval_timeout: 25h}", "policies.ci.unattended.approval_timeout: must be between 1s and 24h0m0s"},
		{"{on_ask: approve, approval_timeout: 10ms}", "policies.ci.unattended.approval_timeout"},
		{"{on_ask: approve, on_timeout: ask}", `policies.ci.unattended.on_timeout: must be deny or allow, got "ask"`},
		{"{on_ask: approve, approve_sources: [rule, approval]}", `policies.ci.unattended.approve_sources[1]: "approval" is not a decision source`},
		{"{on_ask: approve, approve_sources: [nope]}", `policies.ci.unattended.approve_sources[0]: "nope"`},
		{"{on_ask: deny, approval_timeout: 5m}", "apply only with on_ask: approve"},
		{"{on_ask: ask, on_timeout: allow}", "apply only with on_ask: approve"},
	} {
		_, err := loadBody(t, "policies:\n  default: {}\n  ci:\n    unattended: "+tc.body+"\n")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.body, err, tc.want)
		}
	}
	// Served, an approve setting travels to the local servers, whose
	// engines queue the same questions.
	doc, _, err := c.Served()
	if err != nil {
		t.Fatal(err)
	}
	got, err := FromServed(doc, "upstream test")
	if err != nil {
		t.Fatal(err)
	}
	if a := got.enginePolicies()["ci"].Unattended.Approval; a == nil || a.Timeout != 15*time.Minute || a.OnTimeout != engine.Allow || len(a.Sources) != 2 {
		t.Errorf("served ci: approval spec %+v", a)
	}
}

// TestServedUnattended: the served form carries on_ask only when it is ask
// (unset is deny, and a local server that predates the setting takes a set
// that does not name it), so a policy set that says nothing, or deny,
// keeps its version; a local server builds the same engine from it.
func TestServedUnattended(t *testing.T) {
	plain, err := loadBody(t, "policies:\n  default: {}\n  ci: {}\n")
	if err != nil {
		t.Fatal(err)
	}
	_, plainVersion, err := plain.Served()
	if err != nil {
		t.Fatal(err)
	}
	denying, err := loadBody(t, "policies:\n  default: {}\n  ci:\n    unattended: {on_ask: deny}\n")
	if err != nil {
		t.Fatal(err)
	}
	doc, version, err := denying.Served()
	if err != nil {
		t.Fatal(err)
	}
	if version != plainVersion || strings.Contains(string(doc), "unattended:") {
		t.Errorf("on_ask deny changed the served form (%s, %s):\n%s", version, plainVersion, doc)
	}
	asking, err := loadBody(t, "policies:\n  default: {}\n  ci:\n    unattended: {on_ask: ask}\n")
	if err != nil {
		t.Fatal(err)
	}
	doc, version, err = asking.Served()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(doc), "on_ask"); n != 1 || !strings.Contains(string(doc), "unattended:\n      on_ask: ask") {
		t.Errorf("served form names on_ask %d times, want once as ask:\n%s", n, doc)
	}
	f, err := FromServed(doc, "upstream test")
	if err != nil {
		t.Fatal(err)
	}
	if p := f.enginePolicies(); p["ci"].Unattended.OnAsk != engine.Ask || p["default"].Unattended.OnAsk != engine.Deny {
		t.Errorf("served: on_ask ci %s default %s", p["ci"].Unattended.OnAsk, p["default"].Unattended.OnAsk)
	}
	if again, v2, err := f.Served(); err != nil || string(again) != string(doc) || v2 != version {
		t.Errorf("served twice differs (%v):\n%s\n---\n%s", err, doc, again)
	}
}
