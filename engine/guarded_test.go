package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardedFiles: toolgate's own files may not be written, moved,
// linked, replaced or deleted by any tool or shell writer, in any mode,
// bypass included; reading them and other writes go through the usual
// stages.
func TestGuardedFiles(t *testing.T) {
	l := newLayout(t)
	etc := filepath.Join(l.root, "etc", "toolgate")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(etc, "config.yaml")
	if err := os.WriteFile(cfg, []byte("policies: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link in the project to the config.
	if err := os.Symlink(cfg, filepath.Join(l.app, "tg.yaml")); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Guarded: []string{cfg}})
	if err != nil {
		t.Fatal(err)
	}
	req := func(mode Mode, name string, in map[string]any) *Request {
		return &Request{Tool: tool(name, in), WorkingDirectory: l.app, Mode: mode}
	}
	bash := func(cmd string) map[string]any { return map[string]any{"command": cmd} }
	for _, mode := range []Mode{ModeAuto, ModeBypass, ModeAcceptEdits} {
		for _, r := range []*Request{
			req(mode, "Write", map[string]any{"file_path": cfg, "content": "x"}),
			req(mode, "Edit", map[string]any{"file_path": "tg.yaml", "old_string": "a", "new_string": "b"}),
			req(mode, "Bash", bash("ln -sf /dev/zero "+cfg)),
			req(mode, "Bash", bash("rm -f "+cfg)),
			req(mode, "Bash", bash("mkfifo "+cfg)),
			req(mode, "Bash", bash("mv /tmp/x "+cfg)),
			req(mode, "Bash", bash("cp evil.yaml "+etc+"/")),
			req(mode, "Bash", bash("rm -rf "+etc)),
			req(mode, "Bash", bash("cd "+etc+" && truncate -s 0 config.yaml")),
			req(mode, "Bash", bash("truncate -s0 tg.yaml")),
			req(mode, "Bash", bash("echo x > "+cfg)),
			req(mode, "Bash", bash("sed -i s/deny/allow/ "+etc+"/*.yaml")),
			req(mode, "Bash", bash(`python3 -c "open('`+cfg+`','w').write('')"`)),
			req(mode, "Bash", bash("install -m644 x --target-directory="+etc)),
			req(mode, "run_shell_command", bash("chmod 000 "+cfg)),
			req(mode, "shell", map[string]any{"command": []any{"rm", cfg}}),
			req(mode, "Bash", bash(strings.Repeat("cd sub && ", maxGuardDirs)+"touch x")),
		} {
			res := mustCheck(t, e, r)
			if res.Decision != Deny {
				t.Errorf("%v %s %v: %s by %s (%s), want deny", mode, r.Tool.Name, r.Tool.Input, res.Decision, res.Source, res.Reason)
			}
		}
	}
	// Not writes of the guarded files: the usual stages decide.
	for _, r := range []*Request{
		req(ModeBypass, "Bash", bash("rm -rf build")),
		req(ModeBypass, "Bash", bash("cp a.yaml b.yaml")),
		req(ModeBypass, "Bash", bash("git add .")),
		req(ModeBypass, "Bash", bash("touch "+filepath.Join(l.root, "etc", "other.yaml"))),
		req(ModeAuto, "Bash", bash("cat "+cfg)),
		req(ModeBypass, "Write", map[string]any{"file_path": "notes.txt", "content": "x"}),
	} {
		if res := mustCheck(t, e, r); res.Decision == Deny {
			t.Errorf("%v %s %v: denied (%s)", r.Mode, r.Tool.Name, r.Tool.Input, res.Reason)
		}
	}
	if _, err := New(Config{Guarded: []string{"relative.yaml"}}); err == nil {
		t.Error("a relative guarded path was accepted")
	}
}

// TestGuardedPatterns: files guarded by a glob (an audit log's rotated
// backups) are kept from every writer in every mode, as are their
// directory and its parents, while other files beside them are not.
func TestGuardedPatterns(t *testing.T) {
	l := newLayout(t)
	logs := filepath.Join(l.root, "var", "log", "toolgate")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(logs, "audit.jsonl")
	backup := filepath.Join(logs, "audit-2026-11-27T10-00-00.000.jsonl")
	for _, f := range []string{audit, backup, backup + ".gz"} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A link in the project to the logs' directory.
	if err := os.Symlink(logs, filepath.Join(l.app, "logs")); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Guarded: []string{audit}, GuardedPatterns: []string{
		filepath.Join(logs, "audit-*.jsonl"), filepath.Join(logs, "audit-*.jsonl.gz"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := func(mode Mode, name string, in map[string]any) *Request {
		return &Request{Tool: tool(name, in), WorkingDirectory: l.app, Mode: mode}
	}
	bash := func(cmd string) map[string]any { return map[string]any{"command": cmd} }
	for _, mode := range []Mode{ModeAuto, ModeBypass, ModeAcceptEdits} {
		for _, r := range []*Request{
			req(mode, "Write", map[string]any{"file_path": backup, "content": "x"}),
			req(mode, "Edit", map[string]any{"file_path": "logs/audit-2026-11-27T10-00-00.000.jsonl", "old_string": "a", "new_string": "b"}),
			req(mode, "Bash", bash("rm -f "+backup)),
			req(mode, "Bash", bash("rm -f "+backup+".gz")),
			req(mode, "Bash", bash("rm -f logs/audit-2026-11-27T10-00-00.000.jsonl")),
			req(mode, "Bash", bash("rm "+logs+"/audit-*")),
			req(mode, "Bash", bash("rm "+logs+"/*.jsonl")),
			req(mode, "Bash", bash("cd "+logs+" && rm -f *l")),
			req(mode, "Bash", bash("echo x > "+logs+"/audit-2026-12-01T00-00-00.000.jsonl")),
			req(mode, "Bash", bash("ln -sf /dev/null "+backup)),
			req(mode, "Bash", bash("mv "+backup+" /tmp/")),
			req(mode, "Bash", bash("rm -rf "+logs)),
			req(mode, "Bash", bash("rm -rf "+filepath.Join(l.root, "var"))),
			req(mode, "Bash", bash("mv logs /tmp/gone")),
			req(mode, "Bash", bash("gzip -d "+backup+".gz")),
			req(mode, "Bash", bash("rm -f logs/*.jsonl")),
		} {
			res := mustCheck(t, e, r)
			if res.Decision != Deny {
				t.Errorf("%v %s %v: %s by %s (%s), want deny", mode, r.Tool.Name, r.Tool.Input, res.Decision, res.Source, res.Reason)
			}
		}
	}
	// Beside them, other files are the usual stages' business.
	for _, r := range []*Request{
		req(ModeBypass, "Write", map[string]any{"file_path": filepath.Join(logs, "other.log"), "content": "x"}),
		req(ModeBypass, "Bash", bash("rm -f "+logs+"/*.tmp")),
		req(ModeBypass, "Bash", bash("rm -f "+logs+"/auditor.jsonl")),
		req(ModeBypass, "Bash", bash("rm -rf build")),
	} {
		if res := mustCheck(t, e, r); res.Decision == Deny {
			t.Errorf("%v %s %v: denied (%s)", r.Mode, r.Tool.Name, r.Tool.Input, res.Reason)
		}
	}
	for _, bad := range []string{"relative-*.jsonl", "/var/*/audit-*.jsonl", "/var/log/audit-[[:digit:]].jsonl"} {
		if _, err := New(Config{GuardedPatterns: []string{bad}}); err == nil {
			t.Errorf("guarded pattern %q was accepted", bad)
		}
	}
}
