package shell

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRuntimeOptions: a word known only at run time (what xargs supplies,
// $VAR, a leading glob) may start with "-": a program with an option that
// reads or writes a file or runs anything (wc and du --files0-from, grep
// -r and -f, jq -f, hexdump -f, strings @FILE) takes it only where it
// reads no options (after --), or from find, whose paths start with a
// start point, read whole by xargs -0 or handed to -exec.
func TestRuntimeOptions(t *testing.T) {
	ok := []string{
		"git ls-files -z | xargs -0 wc -l --", "git ls-files | xargs wc -l --", "rg --files | xargs -d '\\n' du -sh --",
		"find . -type f -print0 | xargs -0 wc -l", "find src -type f -name '*.go' -print0 | xargs -0 grep -n TODO",
		"find . -type f -print0 | xargs -0 -n1 du -sh", "find . -print0 | xargs -0 -I{} du -sh {}",
		// Split at blanks: the engine judges the tree's names (Tree.SplitSafe).
		"find . -type f -name '*.md' | xargs wc -l",
		"find . -name '*.go' -exec wc -l {} +", "find . -type f -name '*.md' -exec grep -H x {} \\;",
		"git ls-files | xargs ls -l", "git ls-files | xargs basename", "echo --x | xargs echo",
		"grep -c func -- *.go", "wc -l -- *.go", "du -sh -- *", "du -sh src", "du -h -d 1", "du -sh --exclude=node_modules .",
		"stat -c %s -- *", "x=1; du -d \"$x\" -- src",
	}
	bad := []string{
		"echo --files0-from=.env | xargs wc", "echo --files0-from=/proc/self/environ | xargs du",
		"git ls-files -z | xargs -0 -n1 wc -l", "git ls-files | xargs -I{} du -sh {}", "git ls-files | xargs wc -l",
		"rg --files | xargs du -sh", "grep -rl x . | xargs wc -l",
		"find . -print0 | xargs -0 -I{} du -sh --files0-from={}", "git ls-files | xargs -I{} wc -l {} --",
		"grep -c func *.go", "grep -n TODO *", "wc -l *.go", "du -sh *", "hexdump -C *", "strings *", "strings @.env",
		"jq . *.json", "x=--files0-from=.env; wc \"$x\"", "x=a; wc -l $x", "du --files0-from=.env", "du --files0=.env",
		"x=1; du -d $x -- src", "find . -print0 | xargs -0 node --version", "git ls-files | xargs ps",
		"git ls-files -z | xargs -0 lsof",
	}
	for _, line := range ok {
		if a := Analyze(line); !a.ReadOnly {
			t.Errorf("Analyze(%q): not read-only (%s), want read-only", line, a.Reason)
		}
	}
	for _, line := range bad {
		if a := Analyze(line); a.ReadOnly {
			t.Errorf("Analyze(%q): read-only, want not", line)
		}
	}
}

// TestRuntimeOptionsAgainstPrograms checks the reasons against the real
// programs: wc through xargs prints the lines of a --files0-from file,
// and grep given a planted -Rf.md by a glob follows a link out of the
// directory.
func TestRuntimeOptionsAgainstPrograms(t *testing.T) {
	bash := findBash()
	if bash == "" {
		t.Skip("no bash")
	}
	for _, p := range []string{"wc", "xargs", "grep"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skip("no " + p)
		}
	}
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	work := filepath.Join(dir, "work")
	for _, d := range []string{secret, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{filepath.Join(secret, "creds"): "TOKEN=abc\n", filepath.Join(work, ".env"): "SECRET_LINE\n",
		filepath.Join(work, "-Rf.md"): ".\n", filepath.Join(work, ".md"): ".\n", filepath.Join(work, "a.md"): "TODO\n"}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(work, "x.md")); err != nil {
		t.Fatal(err)
	}
	run := func(line string) string {
		cmd := exec.Command(bash, "-c", line)
		cmd.Dir = work
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := run("echo --files0-from=.env | xargs wc"); !strings.Contains(out, "SECRET_LINE") {
		t.Errorf("wc --files0-from through xargs did not print the file (%q): the refusal may be stale", out)
	}
	if out := run("grep -n TODO *.md"); !strings.Contains(out, "TOKEN=abc") {
		t.Errorf("grep with a planted -Rf.md did not follow the link (%q): the refusal may be stale", out)
	}
}

// TestXargsSplitTrees: find's names split by xargs without -0 are vouched
// for only by the trees the engine judges for blanks and quotes; every
// program that takes them reports those trees, a program that reads no
// file too (its dash-free words rest on them).
func TestXargsSplitTrees(t *testing.T) {
	for _, line := range []string{"find src -name '*.md' | xargs wc -l", "find src -name '*.go' -o -name '*.ts' | xargs grep -n x",
		"find src -type f -name '*.go' -print | xargs du -sh"} {
		a := Analyze(line)
		if !a.ReadOnly || !slices.ContainsFunc(a.Trees, func(tr Tree) bool { return tr.SplitSafe && tr.Path == "src" }) {
			t.Errorf("Analyze(%q): read-only %v, trees %+v; want read-only with a split-safe tree of src", line, a.ReadOnly, a.Trees)
		}
	}
	for _, line := range []string{"find 'a b' -name '*.md' | xargs wc -l", "find src -name '*.md' -o -type f | xargs cat",
		"find src -name '*.md' -exec true \\; | xargs cat", "find src -name '*.md' | xargs -L1 cat", "find src -name '.env*' | xargs cat"} {
		if a := Analyze(line); a.ReadOnly {
			t.Errorf("Analyze(%q): read-only, want not", line)
		}
	}
}
