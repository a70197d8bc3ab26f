package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/engine/pathcheck"
)

// Every walker of one check (the path proofs, git's setup and config,
// the toolchain files, the reads) shares the check's look: the mount
// table is polled once per check, and the names a check probes in the
// directories it has proven (toolchain files up to /, git's files) cost
// one lstat each, not an openat2 and a walk each.
func TestCheckLooksOnce(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cwd := tmp + "/proj"
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Policies: map[string]PolicySpec{DefaultPolicy: {Permissions: RuleSet{
		Allow: []string{"Bash(go test ./...)"},
	}}}, Home: tmp + "/home", Classifier: answerAllow{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cwd+"/go.mod", []byte("module x\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Check(t.Context(), &Request{Tool: ToolCall{Name: "Bash", Input: map[string]any{"command": "true"}}, WorkingDirectory: cwd}); err != nil {
		t.Fatal(err) // the mount table's first reading is not a poll
	}
	for _, c := range []struct {
		name, command string
		want          Source
		maxOpens      int64 // openat2 calls: proving the working directory, and little else
	}{
		{"git", "git status", SourceCommandAnalysis, 3},
		{"toolchain", "go test ./...", SourceRule, 2},
		{"search", "find . -name '*.go' -type f | head -5 && git log --oneline -5", SourceCommandAnalysis, 3},
	} {
		req := &Request{Tool: ToolCall{Name: "Bash", Input: map[string]any{"command": c.command}}, WorkingDirectory: cwd, Mode: ModeAuto}
		stop := pathcheck.CountLookups()
		res, err := e.Check(t.Context(), req)
		n := stop()
		if err != nil || res.Source != c.want {
			t.Fatalf("%s: decided by %s (%s), %v; want %s", c.name, res.Source, res.Reason, err, c.want)
		}
		t.Logf("%s: %+v", c.name, n)
		if n.Polls != 1 || n.Opens > c.maxOpens {
			t.Errorf("%s: %+v; want one poll of the mount table and at most %d openat2", c.name, n, c.maxOpens)
		}
	}
}
