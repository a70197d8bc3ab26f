package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadsJudgedOnTheFileSystem covers what only the file system shows:
// globs expanded the way bash expands them (.. after a link included),
// and the trees recursive searches read.
func TestReadsJudgedOnTheFileSystem(t *testing.T) {
	base := t.TempDir()
	project := filepath.Join(base, "project")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{"project/src/pkg", "project/conf", "project/deep/a/b", "outside/x/y"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, body := range map[string]string{
		"project/src/main.go": "package main", "project/deep/a/b/in.go": "package b", "project/conf/.env": "TOKEN=x", "project/conf/app.yaml": "a: 1",
		"outside/x/notes.go": "private", "outside/x/y/z.txt": "z",
	} {
		if err := os.WriteFile(filepath.Join(base, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// deep/a/b/up leads outside; up/.. is outside/x to bash, not deep/a/b.
	if err := os.Symlink(filepath.Join(outside, "x", "y"), filepath.Join(project, "deep", "a", "b", "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(project, "src", "pkg", "ext")); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, nil, nil)
	check := func(cmd string) Result {
		return mustCheck(t, e, &Request{Tool: bashCmd(cmd), WorkingDirectory: project})
	}
	for cmd, want := range map[string]string{
		"cat deep/a/b/up/../*.go": "outside the read roots",
		"grep -r TOKEN conf":      "conf/.env",
		"grep -r TOKEN .":         "may hold secrets",
		"grep -R x src":           "following links",
		"rg -L x src":             "following links",
		"grep -r x s*c":           "glob of trees",
		"rg --hidden TOKEN conf":  "conf/.env",
	} {
		if res := check(cmd); res.Decision == Allow || !strings.Contains(res.Reason, want) {
			t.Errorf("%s: %s %q, want not allowed, naming %q", cmd, res.Decision, res.Reason, want)
		}
	}
	for _, cmd := range []string{"cat src/*.go", "grep -r main src", "rg TOKEN conf", "grep -r x src/pkg/../main.go", "ls deep/a/b"} {
		if res := check(cmd); res.Decision != Allow {
			t.Errorf("%s: %s %q, want allowed", cmd, res.Decision, res.Reason)
		}
	}
	// The Grep tool is ripgrep with its defaults: hidden files are skipped.
	if res := mustCheck(t, e, &Request{Tool: tool("Grep", map[string]any{"pattern": "TOKEN", "path": "conf"}), WorkingDirectory: project}); res.Decision != Allow {
		t.Errorf("Grep conf: %s %q, want allowed", res.Decision, res.Reason)
	}
}
