package shell

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The differential check runs lines the analysis calls read-only through
// real bash, with every table program replaced by a stub that logs its name,
// and fails if bash ran anything else (a program outside the table, a
// state-changing builtin, a table program or builtin the analysis did not
// see) or created a file. It catches places where the parser and bash read a
// line differently. It runs whenever bash is installed (CI uses Debian's);
// TOOLGATE_SHELL_BASHDIFF_DIR may name a directory of fuzz inputs to
// replay, and the fuzz target explores further:
//
//	go test -run XXX -fuzz FuzzBashDiff ./engine/shell/

// stateBuiltins are bash builtins that are never read-only.
var stateBuiltins = map[string]bool{"eval": true, "source": true, ".": true, "export": true, "declare": true,
	"typeset": true, "local": true, "readonly": true, "alias": true, "trap": true, "set": true, "shopt": true,
	"unset": true, "enable": true, "hash": true, "fc": true, "history": true, "bind": true, "let": true, "kill": true,
	"ulimit": true, "umask": true, "exit": true, "return": true, "mapfile": true, "readarray": true, "pushd": true,
	"popd": true, "complete": true, "getopts": true, "shift": true}

type bashDiff struct {
	bash, dir, stub, bashEnv string
	names                    map[string]bool
}

// findBash returns bash's path, or "" when there is none.
func findBash() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/bash"); err == nil {
		return "/usr/bin/bash"
	}
	return ""
}

func newBashDiff(t testing.TB) *bashDiff {
	bash := findBash()
	if bash == "" {
		t.Skip("no bash on PATH or at /usr/bin/bash: the differential check needs it")
	}
	dir := t.TempDir()
	d := &bashDiff{bash: bash, dir: dir, stub: filepath.Join(dir, "stub"), bashEnv: filepath.Join(dir, "env.sh"), names: map[string]bool{}}
	if err := os.MkdirAll(d.stub, 0o755); err != nil {
		t.Fatal(err)
	}
	for n := range programs {
		d.names[n] = true
	}
	for n := range wrappers {
		d.names[n] = true
	}
	for n := range d.names {
		if strings.ContainsAny(n, "[:") {
			continue // builtins only
		}
		script := "#!/bin/sh\necho \"${0##*/}\" >> \"$LOG\"\n"
		switch n {
		case "bash", "sh", "dash", "zsh":
			script += "exec " + strconv.Quote(bash) + " \"$@\"\n" // payloads run for real, under the same stubs
		}
		if err := os.WriteFile(filepath.Join(d.stub, n), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// NUL-separated: a command's text may span lines (here-documents).
	trap := "set -T\ntrap 'printf \"%s\\0\" \"$BASH_COMMAND\" >> \"$LOG.dbg\"' DEBUG\n"
	if err := os.WriteFile(d.bashEnv, []byte(trap), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// check runs line if it is read-only and reports divergences.
func (d *bashDiff) check(t testing.TB, line string) bool {
	t.Helper()
	a := Analyze(line)
	if !a.ReadOnly {
		return false
	}
	// What the analysis saw run: its commands, and the wrappers it
	// unwrapped on the way.
	seen := map[string]bool{}
	for _, c := range a.Commands {
		seen[c.Argv[0]] = true
	}
	for n := range wrappers {
		seen[n] = true
	}
	work, home, log := filepath.Join(d.dir, "work"), filepath.Join(d.dir, "home"), filepath.Join(d.dir, "log")
	for _, p := range []string{work, home, log, log + ".dbg"} {
		os.RemoveAll(p)
	}
	for _, p := range []string{work, home} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bash, "-c", line)
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + d.stub, "HOME=" + home, "LOG=" + log, "BASH_ENV=" + d.bashEnv}
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run()
	if strings.Contains(stderr.String(), "command not found") {
		t.Errorf("%q: bash ran an unknown program: %s", line, stderr.String())
	}
	if b, err := os.ReadFile(log); err == nil {
		for _, n := range strings.Fields(string(b)) {
			switch {
			case !d.names[n]:
				t.Errorf("%q: bash ran %s", line, n)
			case !seen[n]:
				t.Errorf("%q: bash ran %s, which the analysis did not see", line, n)
			}
		}
	}
	if b, err := os.ReadFile(log + ".dbg"); err == nil {
		for _, l := range strings.Split(string(b), "\x00") {
			f := strings.Fields(l)
			switch {
			case len(f) == 0:
			case stateBuiltins[f[0]]:
				t.Errorf("%q: bash ran builtin %q", line, l)
			case d.names[f[0]] && !seen[f[0]]:
				t.Errorf("%q: bash ran %q, which the analysis did not see", line, l)
			}
		}
	}
	for _, p := range []string{work, home} {
		if ents, _ := os.ReadDir(p); len(ents) > 0 {
			t.Errorf("%q: created files in %s", line, p)
		}
	}
	return true
}

func TestBashDiff(t *testing.T) {
	d := newBashDiff(t)
	lines := append(append([]string(nil), harmlessCorpus...), bypassCorpus...)
	lines = append(lines, disagreeSeeds...)
	for _, dir := range []string{"testdata/fuzz/FuzzAnalyze", "testdata/fuzz/FuzzBashDiff", os.Getenv("TOOLGATE_SHELL_BASHDIFF_DIR")} {
		if dir == "" {
			continue
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			s := string(b)
			if i := strings.Index(s, "string("); i >= 0 {
				body := strings.TrimSuffix(strings.TrimSpace(s[i+len("string("):]), ")")
				if u, err := strconv.Unquote(body); err == nil {
					lines = append(lines, u)
				}
			}
		}
	}
	n := 0
	for _, line := range lines {
		if d.check(t, line) {
			n++
		}
	}
	if n < len(harmlessCorpus)/2 {
		t.Errorf("only %d lines were read-only: the check ran too little", n)
	}
	t.Logf("ran %d read-only lines of %d through bash", n, len(lines))
}

func FuzzBashDiff(f *testing.F) {
	for _, l := range disagreeSeeds {
		f.Add(l)
	}
	for _, l := range harmlessCorpus {
		f.Add(l)
	}
	d := newBashDiff(f)
	f.Fuzz(func(t *testing.T, line string) {
		d.check(t, line)
	})
}

// disagreeSeeds are shapes that mvdan.cc/sh and bash may read differently.
// Each hides a command (touch, or a table program the parser does not see)
// from a reader that gets the shape wrong: the analysis must not call it
// read-only, or bash must run only what the analysis saw.
var disagreeSeeds = []string{
	// Backslash-newline in comments: bash ends the comment at the newline.
	"ls # note \\\ntouch pwned",
	"ls #\\\ncat /etc/hostname",
	"git status # x \\\ntouch pwned",
	"ls -la \\\n  # comment \\\ntouch pwned",
	"echo hi; # \\\ntouch pwned",
	"bash -c $'ls # x \\\\\\ntouch pwned'",
	"bash -c 'ls # x \\\ntouch pwned'",
	"bash -c 'cat <<EOF\n$(echo \"\nEOF\ntouch pwned\n\")\nEOF\n'",
	"sh -c 'cat <<EOF\n`echo \"\nEOF\ncat /etc/hostname\n\"`\nEOF\n'",
	// Backslash-newline in and around here-document delimiters, bodies
	// and terminators.
	"cat <<E\\\nOF\nE\ntouch pwned\nEOF\n",
	"cat <<EOF\nhi\\\nEOF\ntouch pwned\nEOF\n",
	"cat <<EOF\nhi\nEOF\\\ntouch pwned\nEOF\n",
	"cat <<'EOF'\nhi \\\nEOF\ntouch pwned\nEOF\n",
	"cat <<EOF \\\n| cat\nhi\nEOF\ntouch pwned\n",
	"cat <<EOF\\\n\nhi\nEOF\ntouch pwned\n",
	// Here-document delimiters with quotes, escapes and expansions.
	"cat <<\"E\"F\nhi\nEF\ntouch pwned\n\"E\"F\n",
	"cat <<E'O'F\nhi\nEOF\ntouch pwned\nE'O'F\n",
	"cat <<\\EOF\nhi\nEOF\ntouch pwned\n\\EOF\n",
	"cat <<$'EOF'\nhi\nEOF\ntouch pwned\n$'EOF'\n",
	"cat <<\"EOF \"\nhi\nEOF\ntouch pwned\nEOF \n",
	"cat <<E$x\nhi\nE\ntouch pwned\nE$x\n",
	"cat <<''\nhi\n\ntouch pwned\n",
	"cat <<'EOF'#x\nhi\nEOF#x\ntouch pwned\nEOF\n",
	"cat <<\"EOF\"#\nhi\nEOF#\ncat /etc/hostname\nEOF\n",
	"cat <<\"\"\nhi\n\ntouch pwned\n",
	// Terminator lines with trailing blanks, and <<- with spaces.
	"cat <<EOF\nhi\nEOF \ntouch pwned\nEOF\n",
	"cat <<EOF\nhi\nEOF\t\ntouch pwned\nEOF\n",
	"cat <<EOF\nhi\n EOF\ntouch pwned\nEOF\n",
	"cat <<-EOF\nhi\n  EOF\ntouch pwned\n\tEOF\n",
	"cat <<-EOF\n\thi\n\t EOF\ntouch pwned\nEOF\n",
	"cat <<EOF\nhi\nEOF;\ntouch pwned\nEOF\n",
	"cat <<EOF\nhi\nEOF # x\ntouch pwned\nEOF\n",
	// Expansions in a body that span the terminator line.
	"cat <<EOF\n$(echo '\nEOF\ntouch pwned\n')\nEOF\n",
	"cat <<EOF\n$(echo \"\nEOF\ntouch pwned\n\")\nEOF\n",
	"cat <<EOF\n`echo '\nEOF\ntouch pwned\n'`\nEOF\n",
	"cat <<EOF\n${HOME:-'\nEOF\ntouch pwned\n'}\nEOF\n",
	"cat <<EOF\n$((1+\nEOF\n2))\nEOF\n",
	"cat <<EOF\n\"\nEOF\ntouch pwned\n\"\nEOF\n",
	"cat <<EOF\n'\nEOF\ntouch pwned\n'\nEOF\n",
	// Nested here-documents and here-documents in substitutions.
	"echo $(cat <<EOF\nhi\nEOF\n)",
	"echo \"$(cat <<EOF\nhi)\nEOF\n)\"",
	"echo $(cat <<EOF\n)\nEOF\n)",
	"echo $(cat <<EOF\nhi\nEOF)\ntouch pwned\nEOF\n",
	"cat <<A $(cat <<B\nb\nB\n)\na\nA\ntouch pwned\n",
	"cat <<A\n$(cat <<B\nA\ntouch pwned\nB\n)\nA\n",
	"echo `cat <<EOF\nhi\nEOF`\ntouch pwned\nEOF\n",
	"cat <<A <<B\na\nA\nb\nB\n",
	"cat <<A; cat <<B\na\nA\nb\nB\n",
	"cat <<A; echo '\nA\ntouch pwned\n'\nA\n",
	"cat <<EOF \"\nEOF\ntouch pwned\n\"\nEOF\n",
	"cat <(cat <<EOF\nhi\nEOF\n)",
	// $(( against $( (.
	"echo $((echo hi) )",
	"echo $((ls); (touch pwned))",
	"echo $( (ls) )",
	"echo $((1)+(2))",
	"((ls)); touch pwned",
	"echo $(( 1 + 2 ))",
	"echo $[1+2]",
	"echo $(( \")\" ))",
	// Case patterns and comments with ) inside $(..).
	"echo $(case a in a) ls;; esac)",
	"echo $(case a in (a) ls;; esac)",
	"echo $(echo # )\ntouch pwned\n)",
	"echo \"$(echo # )\ntouch pwned\n)\"",
	"echo $(echo \")\"; touch pwned)",
	// Backquotes with escapes.
	"echo `echo \\`touch pwned\\``",
	"echo \"`echo \\\"a\\\" ; touch pwned`\"",
	"echo `echo a # b`",
	"echo `# x`; ls",
	"echo `echo \\\\`",
	"echo `ls \\$HOME`",
	// Unicode and control blanks.
	"ls\u00a0;touch pwned",
	"echo a\u00a0touch pwned",
	"ls \u2003-la",
	"ls\u200b -la",
	"echo \u202etouch",
	"ls \v touch",
	"ls \f; cat /etc/hostname",
	"ls;\ftouch pwned",
	"ls\rtouch pwned",
	"echo \x85 hi",
	"echo \xff hi",
	"bash -c $'ls\\rtouch pwned'",
	"bash -c $'ls\\u00a0-la'",
	// # not at the start of a word.
	"echo a#b; ls",
	"echo $(ls)#x",
	"(ls)#x; touch pwned",
	"echo a&#x; touch pwned",
	"echo ${HOME}#b",
	"echo a\\#b",
	"echo 'a'#b",
	// { and } as reserved words.
	"{ ls; }",
	"{ls;}",
	"echo }",
	"{ ls; } ; echo }",
	"echo {; ls }",
	// History expansion and aliases: off in non-interactive bash.
	"echo !!",
	"ls !$",
	"echo hi; !ls",
	"alias ls='touch pwned'; ls",
	// $'..' and $"..".
	"echo $'a\\'; touch pwned; \\''",
	"echo \"$'a\"; touch pwned; \"'\"",
	"echo $\"a\"; ls",
	"echo ${HOME:-\"}\"}; ls",
	"echo \"${HOME:-'}'}\"; ls",
}
