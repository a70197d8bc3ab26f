package shell

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAssignments: a plain assignment to a name only the script gives a
// meaning, from a value proven like an argument, is read-only, and later
// statements may expand the name; nothing else that assigns is.
func TestAssignments(t *testing.T) {
	ok := []string{
		`for png in *.png; do base="${png%.png}"; echo "$base"; done`,
		"for puml in docs/puml/*.puml; do base=$(basename \"$puml\" .puml); png=\"docs/images/${base}.png\"; test -f \"$png\" || echo \"Missing: $base.png\"; done | head -10",
		"for puml in puml/*.puml; do\n  base=$(basename \"$puml\" .puml)\n  if [ \"$base\" != \"_standard-style\" ]; then\n    png=\"images/${base}.png\"\n    if [ ! -f \"$png\" ]; then\n      echo \"Missing $png\"\n    fi\n  fi\ndone",
		"x=1; echo $x", "x=1 && echo $x", "x=1 || echo $x", "x=; echo \"[$x]\"", "x=a y=$x; echo $y", "name=$(git rev-parse --abbrev-ref HEAD); echo $name",
		"dir=$PWD; echo $dir", "n=$((1+2)); echo $n", "x=1; x+=a; echo $x", "my_var2=x; echo ${my_var2:-none}", "x=1; (echo $x)", "x=1; echo $(echo $x)",
		"x=1; if true; then echo $x; fi", "x=1; for i in a; do echo $x$i; done", "x=1; echo $x | cat", "x=~; echo $x",
		"f=README.md; echo $f",
		// The right side of && runs after the left side succeeded; an if's
		// branches run after its condition.
		"true && x=1 && echo $x", "echo a && n=$(ls | wc -l | tr -d ' ') && m=$(ls) && echo \"$n $m\"", "x=1 && y=2 && echo $x$y",
		"if x=$(pwd); then echo $x; else echo $x; fi", "if false; then :; elif x=1; then echo $x; else echo $x; fi",
		"x=1 || y=$x; echo $x", "while read -r l; do n=$l; echo $n; done < README.md", "x='a b'; echo \"$x\"",
	}
	bad := []string{
		// Names the shell, zsh or programs read.
		"PATH=/tmp; ls", "HOME=/tmp", "Base=x", "IFS=:", "histchars=x", "auto_resume=1", "_=x", "__=x", "path=/tmp/x", "fpath=x",
		"http_proxy=http://evil:8080; go list -m all", "https_proxy=x", "no_proxy=x", "all_proxy=x",
		// Values that expand what may be secret or run something.
		"x=$GITHUB_TOKEN; echo $x", "x=${DB_PASS}", "x=\"$AWS_SECRET_ACCESS_KEY\"", "x=$(printenv GITHUB_TOKEN)", "x=$(rm -rf .)",
		"x=$(cat ~/.ssh/id_rsa)", "x=`curl evil`", "x=${!y}", "x=$((y+1))", "x=$x; echo $x", "x=${y:=z}",
		// Arrays, subscripts, declarations, exports.
		"x=(a b); echo $x", "x[0]=1", "x[$(id)]=1", "export x=1", "declare x=1", "declare -x x=1", "local x=1", "readonly x=1",
		"typeset x=1", "x=1; export x",
		// An assignment seen only where it surely ran.
		"echo $x; x=1", "true && x=1; echo $x", "false || x=1; echo $x", "x=1 | cat; echo $x", "(x=1); echo $x", "{ x=1; }; echo $x",
		"if true; then x=1; fi; echo $x", "for i in a; do x=1; done; echo $x", "x=1 & echo $x", "echo $(x=1); echo $x",
		"while false; do x=1; done; echo $x", "for i in a b; do echo $x; x=$i; done",
		"true || x=1 && echo $x", "(true && x=1) && echo $x", "if x=1; then :; fi; echo $x", "if true; then x=1; fi && echo $x",
		"x=1 < /dev/null; echo $x", "x=1 >/dev/null && echo $x", "true && x=1 | cat && echo $x", "true && x=1 & echo $x",
		"while x=1; false; do :; done; echo $x", "if false; then x=1; elif echo $x; then :; fi",
		// Prefixes stay environment for the command.
		"x=1 ls", "x=1 git status", "GIT_DIR=x git log",
		// Other shells.
		"sh -c 'x=1; echo $x'", "zsh -c 'x=1'", "dash -c 'x=1'",
		// Nothing runs.
		"x=1; y=2", "x=1", "x=$HOME",
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
	// bash runs only what the analysis saw, and no builtin that changes
	// state.
	t.Run("bash", func(t *testing.T) {
		d := newBashDiff(t)
		for _, line := range ok {
			d.check(t, line)
		}
	})
}

// TestScriptVariables: a variable the script sets counts only where it
// surely holds the script's value: a for loop's variable in the loop's
// body, read's names where read succeeded (it leaves them as they were on
// a read error, and -t 0 assigns nothing), in the same shell, and x+= is
// an expansion of x. Checked against bash: each refused line prints the
// environment's v when run as the attack means it (stdin closed, or no
// loop item), each allowed one never does.
func TestScriptVariables(t *testing.T) {
	ok := []string{
		`for v in *.go; do echo "$v"; done`, `for v in $(true); do echo "$v"; done`, `for v in; do echo $v; done`,
		`while read -r v; do echo "$v"; done`, `cat README.md | while read -r v; do echo "$v"; done`, `read -r v && echo "$v"`,
		`read v w && echo "$v $w"`, `if read -r v; then echo "$v"; fi`, `if ! true; then :; elif read v; then echo $v; fi`,
		`while read -r v && true; do echo "$v"; done`, `read v < README.md && echo $v`, `v=1; v+=2; echo $v`,
		`for f in a b; do v=$f; v+=.md; echo $v; done`, `for v in a; do for w in b; do echo $v$w; done; done`,
	}
	// leaks print the environment's value in bash (checked below).
	leaks := []string{
		`v+=; echo $v`, `v+=""; printf '%s\n' "$v"`, `v+=x; echo $v`, `(v=1); v+=x; echo $v`,
		`for v in; do :; done; echo $v`, `for v in $(true); do :; done; echo "$v"`,
		`for w in a; do for v in; do :; done; echo $v; done`, `true | read v; echo $v`, `read v | cat; echo $v`, `read v & echo $v`,
		`echo $v; read v`, `read -t 0 v; echo $v`, `read -t 0 v && echo $v`, `read v; echo $v`, `{ read v; echo $v; } <&-`,
		`read v || echo $v`, `if read v; then :; else echo $v; fi`, `until read v; do echo $v; done`, `! read v && echo $v`,
		`while read v; do :; done; echo $v`, `read v w; echo $w`, `read v < /nonexistent; echo $v`, `(read v) && echo $v`,
		`echo $(read v) && echo $v`,
	}
	bad := append([]string{
		// Refused out of caution: after a loop, options that may assign
		// nothing, read through a wrapper.
		`for v in a; do :; done; echo $v`, `read -u 3 v && echo $v`, `read -n 0 v && echo $v`, `read -N 0 v && echo $v`,
		`read -d x v && echo $v`, `read -rs v && echo $v`, `command read v && echo $v`, `builtin read v && echo $v`,
		// Names the shell or programs read are never set.
		`read https_proxy`, `for https_proxy in a; do go list -m all; done`, `for myVar in a; do echo $myVar; done`, `read Base`,
	}, leaks...)
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
	bash := findBash()
	if bash == "" {
		t.Skip("no bash")
	}
	d := newBashDiff(t)
	for _, line := range ok {
		d.check(t, line)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("line one\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(line string, closed bool) string {
		script := line
		if closed {
			script = "exec 0<&-\n" + line
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bash, "-c", script)
		cmd.WaitDelay = time.Second
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "v=ENVVAL", "w=ENVVAL", "https_proxy=ENVVAL", "myVar=ENVVAL", "Base=ENVVAL"}
		if !closed {
			f, err := os.Open(filepath.Join(dir, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd.Stdin = f
		}
		var out capped
		cmd.Stdout, cmd.Stderr = &out, &out
		_ = cmd.Run()
		return out.String()
	}
	for _, line := range ok {
		for _, closed := range []bool{false, true} {
			if out := run(line, closed); strings.Contains(out, "ENVVAL") {
				t.Errorf("bash -c %q (stdin closed: %v) printed the environment's value: %q", line, closed, out)
			}
		}
	}
	// Each leak prints the environment's value in one of the two runs.
	for _, line := range leaks {
		if out := run(line, false) + run(line, true); !strings.Contains(out, "ENVVAL") {
			t.Errorf("bash -c %q never printed the environment's value: %q; the refusal may be stale", line, out)
		}
	}
}

// capped keeps the first 64 KiB written to it (until v; do echo $v; done
// loops forever on a closed stdin).
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := 64<<10 - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
