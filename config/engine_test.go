package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/engine"
)

func decide(t *testing.T, eng *engine.Engine, cwd string, mode engine.Mode, tool string, input map[string]any) engine.Result {
	t.Helper()
	res, err := eng.Check(t.Context(), &engine.Request{WorkingDirectory: cwd, Mode: mode, Tool: engine.ToolCall{Name: tool, Input: input}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// "/path" in a rule is relative to the agent's working directory, never to
// the config file's directory.
func TestNewEngineSlashPathIsTheWorkingDirectory(t *testing.T) {
	dir, project := t.TempDir(), t.TempDir()
	c, err := Load(writeAt(t, dir, "toolgate.yaml", "policies:\n  default:\n    permissions:\n      deny: [\"Edit(/secret-notes/**)\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	eng, _, err := c.NewEngine(Runtime{})
	if err != nil {
		t.Fatal(err)
	}
	edit := func(path string) engine.Result {
		return decide(t, eng, project, engine.ModeAcceptEdits, "Edit", map[string]any{"file_path": path, "old_string": "a", "new_string": "b"})
	}
	if res := edit(filepath.Join(project, "secret-notes", "k")); res.Decision != engine.Deny || res.Source != engine.SourceRule {
		t.Errorf("an edit under the working directory: %s by %s, want a deny by rule", res.Decision, res.Source)
	}
	if res := edit(filepath.Join(dir, "secret-notes", "k")); res.Source == engine.SourceRule {
		t.Errorf("an edit under the config's directory: %s by %s (%s), matched as if the rule were anchored there", res.Decision, res.Source, res.Reason)
	}
}

// Every engine keeps the agents off toolgate's own files, whatever the
// mode: the config and its imports, and the files the runtime names.
func TestNewEngineSelfProtection(t *testing.T) {
	dir, project := t.TempDir(), t.TempDir()
	settings := writeAt(t, dir, "claude.json", `{"permissions": {"allow": ["Read"]}}`)
	cfgPath := writeAt(t, dir, "toolgate.yaml", "policies:\n  default:\n    claude_settings: claude.json\n")
	cert := writeAt(t, dir, "tls.crt", "cert")
	key := writeAt(t, dir, "tls.key", "key")
	c, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(dir, "ca[1].pem")
	eng, warnings, err := c.NewEngine(Runtime{OwnFiles: []string{cert, odd}, SecretFiles: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], odd) {
		t.Errorf("warnings %q, want one naming %s", warnings, odd)
	}
	for _, tt := range []struct {
		tool  string
		input map[string]any
	}{
		{"Write", map[string]any{"file_path": cfgPath, "content": "policies: {default: {}}"}},
		{"Edit", map[string]any{"file_path": settings, "old_string": "a", "new_string": "b"}},
		{"Write", map[string]any{"file_path": cert, "content": "x"}},
		{"Read", map[string]any{"file_path": key}},
		{"Bash", map[string]any{"command": "cat " + key}},
		{"Bash", map[string]any{"command": "mv /tmp/evil " + cert}},
		{"Bash", map[string]any{"command": "rm " + cfgPath}},
	} {
		if res := decide(t, eng, project, engine.ModeBypass, tt.tool, tt.input); res.Decision != engine.Deny {
			t.Errorf("%s %v: %s by %s (%s), want deny", tt.tool, tt.input, res.Decision, res.Source, res.Reason)
		}
	}
	// The certificate is not a secret: reading it is not denied (it is
	// outside the read roots, which the imported allow rule cannot widen,
	// so default mode asks).
	if res := decide(t, eng, project, engine.ModeDefault, "Read", map[string]any{"file_path": cert}); res.Decision != engine.Ask {
		t.Errorf("reading the certificate: %s by %s (%s)", res.Decision, res.Source, res.Reason)
	}
}

// TestSelfProtectionNamesTheRule: the config file lies under the tree
// rm -rf / deletes, so the call is also a write to toolgate's own files;
// the deny rule that says why (Bash(rm -rf /)) is the one named, the
// self-protection reason after it. Without a rule, self-protection says
// the directory holds toolgate's files.
func TestSelfProtectionNamesTheRule(t *testing.T) {
	path := write(t, "policies:\n  default: {}\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	eng, _, err := c.NewEngine(Runtime{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	for _, tc := range []struct {
		cmd, rule, reason string
	}{
		{"rm -rf /", "Bash(rm -rf /)", "denied by rule Bash(rm -rf /); also: / holds toolgate's own files, which no agent may change (self-protection)"},
		{"rm -rf " + dir, "", dir + " holds toolgate's own files, which no agent may change (self-protection)"},
		{"rm " + path, "", path + " is one of toolgate's own files, which no agent may change (self-protection)"},
	} {
		res, err := eng.Check(t.Context(), &engine.Request{WorkingDirectory: dir, Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": tc.cmd}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision != engine.Deny || res.MatchedRule != tc.rule || res.Reason != tc.reason {
			t.Errorf("%s: %v, rule %q, reason %q; want deny, rule %q, reason %q", tc.cmd, res.Decision, res.MatchedRule, res.Reason, tc.rule, tc.reason)
		}
	}
	// The rule the config adds to guard its own file (Edit(//path)) says
	// no more than self-protection does: only that is said.
	res, err := eng.Check(t.Context(), &engine.Request{WorkingDirectory: dir, Tool: engine.ToolCall{Name: "Edit", Input: map[string]any{"file_path": path, "old_string": "a", "new_string": "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := path + " is one of toolgate's own files, which no agent may change (self-protection)"; res.Decision != engine.Deny || res.Reason != want {
		t.Errorf("edit of the config: %v, reason %q; want deny, %q", res.Decision, res.Reason, want)
	}
}
