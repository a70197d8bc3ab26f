package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/engine"
)

// writeAt writes body to dir/name, making directories, and returns the path.
func writeAt(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const teamSettings = `{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": ["Bash(npm run test:*)", "Read(./src/**)", "mcp__github__get_issue"],
    "ask": ["Bash(git push *)"],
    "deny": ["Read(./.env)", "Bash(make deploy)", "WebFetch(domain:paste.example)"],
    "defaultMode": "acceptEdits",
    "additionalDirectories": ["../docs"]
  },
  "autoMode": {
    "environment": ["$defaults", "Source control: github.example/acme"],
    "soft_deny": ["Dropping the staging database."],
    "hard_deny": ["Pushing to the release branch."],
    "allow": ["$defaults", "Deploying to the dev cluster."],
    "classify_all_shell": true
  },
  "env": {"FOO": "bar"},
  "hooks": {"PreToolUse": []},
  "model": "opus"
}`

func TestClaudeSettingsImport(t *testing.T) {
	dir := t.TempDir()
	settings := writeAt(t, dir, "claude/settings.json", teamSettings)
	cfgPath := writeAt(t, dir, "toolgate.yaml", `
policies:
  default:
    claude_settings: claude/settings.json
    permissions:
      allow: ["Bash(make build)"]
      deny: ["Bash(rm -rf *)"]
    auto_mode:
      environment: ["The agent runs unattended."]
  plain:
    permissions:
      deny: [Bash]
`)
	// Relative paths resolve against the config file, not the working
	// directory (the test runs in the package directory).
	c, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Policies["default"]
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	// After the built-in rules, the policy's own rules, then the imported
	// ones, each recorded with the file it came from.
	check("allow", added(t, c, "default", "permissions.allow"), []string{"Bash(make build)", "Bash(npm run test:*)", "Read(./src/**)", "mcp__github__get_issue"})
	check("allow from", originsOf(t, c, "default", "permissions.allow"), []string{cfgPath, settings, settings, settings})
	check("ask", added(t, c, "default", "permissions.ask"), []string{"Bash(git push *)"})
	check("deny", added(t, c, "default", "permissions.deny"), []string{"Bash(rm -rf *)", "Read(./.env)", "Bash(make deploy)", "WebFetch(domain:paste.example)"})
	check("environment", added(t, c, "default", "auto_mode.environment"), []string{"The agent runs unattended.", "Source control: github.example/acme"})
	base, err := BuiltinPolicy()
	if err != nil || len(base.AutoMode.Environment) == 0 {
		t.Fatalf("the built-in policy has no environment (%v)", err)
	}
	builtinEnv := slices.Repeat([]string{originBuiltin}, len(base.AutoMode.Environment))
	check("environment from", originsOf(t, c, "default", "auto_mode.environment"), append(builtinEnv, cfgPath, settings))
	check("soft_deny", added(t, c, "default", "auto_mode.soft_deny"), []string{"Dropping the staging database."})
	check("hard_deny", added(t, c, "default", "auto_mode.hard_deny"), []string{"Pushing to the release branch."})
	check("auto allow", added(t, c, "default", "auto_mode.allow"), []string{"Deploying to the dev cluster."})
	if p.ClaudeSettings != settings {
		t.Errorf("claude_settings %q, want the absolute path %q", p.ClaudeSettings, settings)
	}
	if len(added(t, c, "plain", "permissions.allow")) != 0 {
		t.Error("the import leaked into another policy")
	}
	check("files", c.Files(), []string{cfgPath, settings})

	// The imported rules decide, and deny beats allow across files.
	eng, _, err := c.NewEngine(Runtime{})
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	for _, tt := range []struct {
		cmd  string
		want engine.Decision
	}{
		{"npm run test -- --coverage", engine.Allow},
		{"make deploy", engine.Deny},
		{"git push origin main", engine.Ask},
		{"make build && make deploy", engine.Deny},
	} {
		res, err := eng.Check(t.Context(), &engine.Request{WorkingDirectory: cwd, Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": tt.cmd}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision != tt.want || res.Source != engine.SourceRule {
			t.Errorf("%s: %s from %s (%s), want %s by rule", tt.cmd, res.Decision, res.Source, res.MatchedRule, tt.want)
		}
	}
}

// Load is a function of the files: a changed settings file shows on the
// next Load.
func TestClaudeSettingsReload(t *testing.T) {
	dir := t.TempDir()
	settings := writeAt(t, dir, "settings.json", `{"permissions": {"deny": ["Bash(make deploy)"]}}`)
	cfgPath := writeAt(t, dir, "toolgate.yaml", "policies:\n  default:\n    claude_settings: ./settings.json\n  other:\n    claude_settings: "+settings+"\n")
	c, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Files(); !slices.Equal(got, []string{cfgPath, settings}) {
		t.Errorf("files %q: the settings file two policies import is listed once", got)
	}
	writeAt(t, dir, "settings.json", `{"permissions": {"deny": ["Bash(make release)"]}}`)
	c, err = Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := added(t, c, "default", "permissions.deny"); !slices.Equal(got, []string{"Bash(make release)"}) {
		t.Errorf("after the edit: %q", got)
	}
	writeAt(t, dir, "settings.json", `{"permissions": {"deny": "Bash(make release)"}}`)
	if _, err := Load(cfgPath); err == nil {
		t.Error("a broken settings file was accepted on reload")
	}
}

func TestClaudeSettingsHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	settings := writeAt(t, home, ".claude/settings.json", `{"permissions": {"ask": ["Bash(git push *)"]}}`)
	c, err := Load(write(t, "policies:\n  default:\n    claude_settings: ~/.claude/settings.json\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Policies["default"]; p.ClaudeSettings != settings || len(p.Permissions.Ask) != 1 {
		t.Errorf("policy %+v", p)
	}
}

func TestClaudeSettingsErrors(t *testing.T) {
	tests := []struct {
		name     string
		settings string
		want     []string
	}{
		{"malformed", "{\n  \"permissions\": {\"allow\": [\"Bash(ls)\",]}\n}", []string{"line 2", "malformed JSON"}},
		{"empty file", "", []string{"malformed JSON"}},
		{"top level list", `["Bash(ls)"]`, []string{"(top level): want an object, got a list"}},
		{"permissions list", `{"permissions": ["Bash(ls)"]}`, []string{"permissions: want an object, got a list"}},
		{"allow string", `{"permissions": {"allow": "Bash(ls)"}}`, []string{"permissions.allow: want a list of strings, got a string"}},
		{"deny number", `{"permissions": {"deny": ["Bash(ls)", 7]}}`, []string{"permissions.deny[1]: want a string, got a number"}},
		{"ask null entry", `{"permissions": {"ask": [null]}}`, []string{"permissions.ask[0]: want a string, got null"}},
		{"automode string", `{"autoMode": "on"}`, []string{"autoMode: want an object, got a string"}},
		{"environment object", `{"autoMode": {"environment": {"a": 1}}}`, []string{"autoMode.environment: want a list of strings, got an object"}},
		{"bad rule", `{"permissions": {"deny": ["Bash(rm -rf /)", "Bash(rm -rf"]}}`, []string{"permissions.deny[1]", `rule "Bash(rm -rf"`, "missing closing parenthesis"}},
		{"empty rule", `{"permissions": {"allow": [" "]}}`, []string{"permissions.allow[0]", "empty rule"}},
		// A misspelling must not drop rules unnoticed.
		{"misspelt deny", `{"permissions": {"denny": ["Bash(rm -rf /)"]}}`, []string{"permissions.denny: not a key Claude Code reads"}},
		{"capital Deny", `{"permissions": {"Deny": ["Bash(rm -rf /)"]}}`, []string{"permissions.Deny: not a key Claude Code reads"}},
		{"misspelt soft_deny", `{"autoMode": {"softDeny": ["x"]}}`, []string{"autoMode.softDeny: not a key Claude Code reads"}},
		{"capital Permissions", `{"Permissions": {"deny": ["Bash(rm -rf /)"]}}`, []string{"Permissions: not a key Claude Code reads; did you mean permissions?"}},
		{"top level null", `null`, []string{"(top level): want an object, got null"}},
		{"nothing to import", `{"env": {"A": "b"}, "model": "opus"}`, []string{"neither permissions nor autoMode is set"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			settings := writeAt(t, dir, "settings.json", tt.settings)
			cfgPath := writeAt(t, dir, "toolgate.yaml", "policies:\n  strict:\n    claude_settings: settings.json\n")
			_, err := Load(cfgPath)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append([]string{cfgPath, "policies.strict.claude_settings", settings}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}

	dir := t.TempDir()
	cfgPath := writeAt(t, dir, "toolgate.yaml", "policies:\n  default:\n    claude_settings: missing.json\n")
	_, err := Load(cfgPath)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "missing.json")) || !strings.Contains(err.Error(), "policies.default.claude_settings") {
		t.Errorf("missing settings file: %v", err)
	}
}
