package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServedForm: the served form is canonical (served again from what it
// serves, it is the same bytes and version), carries every layer applied,
// and says whether clients may allow: not unless the file says so; a
// served config compiles to an engine of that version, and refuses
// settings that only a file can resolve.
func TestServedForm(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.yaml")
	body := "policies:\n  default:\n    permissions: {deny: [\"Bash(make deploy)\"]}\n  open:\n    client_allow_rules: true\n    accept_edits: false\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, version, err := c.Served()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(version, "sha256:") || version != Version(doc) {
		t.Fatalf("version %q of its document %q", version, Version(doc))
	}
	s := string(doc)
	for _, want := range []string{"Bash(make deploy)", "client_allow_rules: false", "client_allow_rules: true", "accept_edits: false"} {
		if !strings.Contains(s, want) {
			t.Errorf("served form lacks %q:\n%s", want, s)
		}
	}
	if !strings.Contains(s, "Read(//**/.env)") && !strings.Contains(s, ".env") {
		t.Errorf("the built-in layer is not in the served form:\n%s", s)
	}
	f, err := FromServed(doc, "upstream test")
	if err != nil {
		t.Fatal(err)
	}
	again, v2, err := f.Served()
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != s || v2 != version {
		t.Fatalf("served twice differs:\n%s\n---\n%s", s, again)
	}
	eng, _, err := f.NewEngine(Runtime{})
	if err != nil {
		t.Fatal(err)
	}
	if eng.Version() != version {
		t.Errorf("engine version %q, want %q", eng.Version(), version)
	}
	if p := f.enginePolicies(); !p["default"].RefuseClientAllowRules || p["open"].RefuseClientAllowRules {
		t.Errorf("served client_allow_rules: default %v open %v", p["default"].RefuseClientAllowRules, p["open"].RefuseClientAllowRules)
	}
	// The file itself lets clients allow where it does not say otherwise.
	if p := c.enginePolicies(); p["default"].RefuseClientAllowRules {
		t.Error("a config file's policy refuses client allow rules by default")
	}

	for name, bad := range map[string]string{
		"no default":      "policies:\n  other: {}\n",
		"extends":         "policies:\n  default: {extends: none}\n",
		"claude settings": "policies:\n  default: {claude_settings: x.json}\n",
		"unknown field":   "policies:\n  default: {nonsense: 1}\n",
	} {
		if _, err := FromServed([]byte(bad), "upstream test"); err == nil || !strings.Contains(err.Error(), "upstream test") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A served policy that does not say lets no client allow.
	f, err = FromServed([]byte("policies:\n  default: {}\n"), "upstream test")
	if err != nil {
		t.Fatal(err)
	}
	if !f.enginePolicies()["default"].RefuseClientAllowRules {
		t.Error("a served policy without client_allow_rules lets clients allow")
	}
}

// TestServedClientBypass: a config file's policy lets clients use bypass
// mode unless it says otherwise; a served one only when it says so, and
// its served form names the field only then (local servers that do not
// know it still take the sets of policies that refuse bypass mode).
func TestServedClientBypass(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.yaml")
	body := "policies:\n  default: {}\n  ci:\n    client_bypass: true\n  strict:\n    client_bypass: false\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.enginePolicies(); p["default"].RefuseClientBypass || p["ci"].RefuseClientBypass || !p["strict"].RefuseClientBypass {
		t.Errorf("config file: refuse bypass default %v ci %v strict %v", p["default"].RefuseClientBypass, p["ci"].RefuseClientBypass, p["strict"].RefuseClientBypass)
	}
	doc, _, err := c.Served()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(doc), "client_bypass"); n != 1 || !strings.Contains(string(doc), "client_bypass: true") {
		t.Errorf("served form names client_bypass %d times, want once as true:\n%s", n, doc)
	}
	f, err := FromServed(doc, "upstream test")
	if err != nil {
		t.Fatal(err)
	}
	if p := f.enginePolicies(); !p["default"].RefuseClientBypass || p["ci"].RefuseClientBypass || !p["strict"].RefuseClientBypass {
		t.Errorf("served: refuse bypass default %v ci %v strict %v", p["default"].RefuseClientBypass, p["ci"].RefuseClientBypass, p["strict"].RefuseClientBypass)
	}
	again, _, err := f.Served()
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(doc) {
		t.Errorf("served twice differs:\n%s\n---\n%s", doc, again)
	}
}

// TestServedBounds: a served set over the size or rule bounds is refused,
// naming where it came from, before it is compiled.
func TestServedBounds(t *testing.T) {
	rules := func(n int) []byte {
		var b strings.Builder
		b.WriteString("policies:\n  default:\n    permissions:\n      deny:\n")
		for i := range n {
			fmt.Fprintf(&b, "        - \"Bash(x%d *)\"\n", i)
		}
		return []byte(b.String())
	}
	if _, err := FromServed(rules(MaxServedRules+1), "upstream test"); err == nil || !strings.Contains(err.Error(), "rules") {
		t.Errorf("%d rules: %v", MaxServedRules+1, err)
	}
	big := append(rules(10), "# "+strings.Repeat("x", MaxServedBytes)+"\n"...)
	if _, err := FromServed(big, "upstream test"); err == nil || !strings.Contains(err.Error(), "upstream test") || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("%d bytes: %v", len(big), err)
	}
	if _, err := FromServed(rules(1000), "upstream test"); err != nil {
		t.Errorf("1000 rules: %v", err)
	}
}
