package shell

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The differential check runs lines the analysis calls read-only through
// real bash, with every table program replaced by a stub that logs its name,
// and fails if bash ran anything else (a program outside the table, a
// state-changing builtin) or created a file. It catches places where the
// parser and bash read a line differently. It is opt-in because it runs
// bash: set TOOLGATE_SHELL_BASHDIFF=1, and optionally
// TOOLGATE_SHELL_BASHDIFF_DIR to a directory of fuzz inputs to replay, e.g.
//
//	TOOLGATE_SHELL_BASHDIFF=1 go test -run BashDiff ./engine/shell/
//	TOOLGATE_SHELL_BASHDIFF=1 go test -run XXX -fuzz FuzzBashDiff ./engine/shell/

// stateBuiltins are bash builtins that are never read-only.
var stateBuiltins = map[string]bool{"eval": true, "source": true, ".": true, "export": true, "declare": true,
	"typeset": true, "local": true, "readonly": true, "alias": true, "trap": true, "set": true, "shopt": true,
	"unset": true, "enable": true, "hash": true, "fc": true, "history": true, "bind": true, "let": true, "kill": true,
	"ulimit": true, "umask": true, "exit": true, "return": true, "mapfile": true, "readarray": true, "pushd": true,
	"popd": true, "complete": true, "getopts": true, "shift": true}

type bashDiff struct {
	dir, stub, bashEnv string
	names              map[string]bool
}

func newBashDiff(t testing.TB) *bashDiff {
	if os.Getenv("TOOLGATE_SHELL_BASHDIFF") == "" {
		t.Skip("set TOOLGATE_SHELL_BASHDIFF=1 to run lines through bash")
	}
	if _, err := os.Stat("/usr/bin/bash"); err != nil {
		t.Skip("needs /usr/bin/bash")
	}
	dir, err := os.MkdirTemp("", "shell-bashdiff")
	if err != nil {
		t.Fatal(err)
	}
	d := &bashDiff{dir: dir, stub: filepath.Join(dir, "stub"), bashEnv: filepath.Join(dir, "env.sh"), names: map[string]bool{}}
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
			script += "exec /usr/bin/bash \"$@\"\n" // payloads run for real, under the same stubs
		}
		if err := os.WriteFile(filepath.Join(d.stub, n), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	trap := "set -T\ntrap 'printf \"%s\\n\" \"$BASH_COMMAND\" >> \"$LOG.dbg\"' DEBUG\n"
	if err := os.WriteFile(d.bashEnv, []byte(trap), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// check runs line if it is read-only and reports divergences.
func (d *bashDiff) check(t testing.TB, line string) bool {
	if !Analyze(line).ReadOnly {
		return false
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
	cmd := exec.Command("/usr/bin/timeout", "2", "/usr/bin/bash", "-c", line)
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + d.stub, "HOME=" + home, "LOG=" + log, "BASH_ENV=" + d.bashEnv}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run()
	if strings.Contains(stderr.String(), "command not found") {
		t.Errorf("%q: bash ran an unknown program: %s", line, stderr.String())
	}
	if b, err := os.ReadFile(log); err == nil {
		for _, n := range strings.Fields(string(b)) {
			if !d.names[n] {
				t.Errorf("%q: bash ran %s", line, n)
			}
		}
	}
	if b, err := os.ReadFile(log + ".dbg"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 0 && stateBuiltins[f[0]] {
				t.Errorf("%q: bash ran builtin %q", line, l)
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
	defer os.RemoveAll(d.dir)
	lines := append(append([]string(nil), harmlessCorpus...), bypassCorpus...)
	for _, dir := range []string{"testdata/fuzz/FuzzAnalyze", os.Getenv("TOOLGATE_SHELL_BASHDIFF_DIR")} {
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
	t.Logf("ran %d read-only lines through bash", n)
}

func FuzzBashDiff(f *testing.F) {
	for _, l := range harmlessCorpus {
		f.Add(l)
	}
	for _, l := range bypassCorpus {
		f.Add(l)
	}
	var d *bashDiff
	f.Fuzz(func(t *testing.T, line string) {
		if d == nil {
			d = newBashDiff(t)
		}
		d.check(t, line)
	})
}
