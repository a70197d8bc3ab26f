package shell

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeywordValues: an option whose value is a keyword takes only the
// values the table lists, spelled out: GNU argmatch takes any unambiguous
// abbreviation (grep -d rec recurses) and some programs ignore case.
func TestKeywordValues(t *testing.T) {
	ok := []string{
		"grep -d skip x f", "grep -d read x f", "grep --directories=skip x f", "grep -D skip x f", "grep --devices=read x f",
		"grep --binary-files=without-match x f", "grep --color=auto x f", "grep --colour=never x f", "grep --color x f",
		"sort --sort=numeric f", "sort --check=quiet f", "uniq --group=append f", "tail --follow=name f", "od --endian=little f",
		"diff --color=always a b", "rg --sort=path x", "rg --color never x", "date --iso-8601=seconds", "date -Iseconds",
	}
	bad := []string{
		"grep -d rec API_KEY .", "grep -drec x .", "grep --directories=recu -n token .", "grep --directories rec x .",
		"grep -d Recurse x .", "grep -d re x .", "grep -D re x f", "grep --devices=rea x f", "grep --binary-files=tex x f",
		"grep --colour=ALWAYS x f", "grep --color=al x f", "grep -d 're*' x .", "grep -d rec* x .",
		"sort --sort=num f", "uniq --group=app f", "tail --follow=n f", "od --endian=l f", "diff --color=al a b",
		"rg --sort=pa x", "date --iso-8601=sec",
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
	// -d recurse is a recursive search, judged as one.
	if a := Analyze("grep -d recurse x src"); len(a.Trees) != 1 || a.Trees[0].Path != "src" {
		t.Errorf("grep -d recurse: trees %+v, want src", a.Trees)
	}
}

// TestKeywordValuesAgainstGrep checks the reason against GNU grep: it
// recurses with an abbreviated -d, and takes every value the table lists.
func TestKeywordValuesAgainstGrep(t *testing.T) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		t.Skip("no grep")
	}
	if out, _ := exec.Command(grep, "--version").Output(); !strings.Contains(string(out), "GNU grep") {
		t.Skip("not GNU grep")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d", ".env"), []byte("SECRET=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(grep, args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		return string(out), err
	}
	for _, v := range []string{"-drec", "--directories=recu", "--dir=recurs"} {
		if out, _ := run(v, "SECRET", "."); !strings.Contains(out, ".env") {
			t.Errorf("grep %s did not recurse (%q): the refusal may be stale", v, out)
		}
	}
	sp := programs["grep"]
	for opt, vals := range sp.enumVals {
		for _, v := range vals {
			arg := optName(opt) + "=" + v
			if len(opt) == 1 {
				arg = optName(opt) + v
			}
			if _, err := run(arg, "-s", "-q", "SECRET", "d/.env"); err != nil {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 {
					t.Errorf("grep %s: %v", arg, err)
				}
			}
		}
	}
}
