package shell

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestGitFormats(t *testing.T) {
	ok := []string{
		"git log --format='%h %an %s'", "git log --pretty=format:'%H %ad' --date=short", "git log --pretty=oneline", "git log --pretty",
		"git log --format=%ai -1", "git show -s --format='%C(auto)%h%d %s %Cgreen(%cr)%Creset'", "git log --format='%<(20,trunc)%s|%w(72,2,4)%b'",
		"git log --format='%x09%H%x00'", "git log --format='%(describe) %(trailers:key=Signed-off-by)'", "git log --format=tformat:'%+b'",
		"git for-each-ref --format='%(refname:short) %(objectname)' refs/heads", "git branch --format='%(refname:short)'",
		"git tag -l --format='%(refname) %(*objectname)'", "git ls-files --format='%(objectname) %(path)'",
		"git ls-tree --format='%(objectmode) %(path)' HEAD", "git cat-file --batch-check='%(objectname) %(objecttype)'",
		"git shortlog -sn --format='%an'", "git log --format=fuller", "git log --pretty=reference -3", "git log --format='%%G? is literal'",
		"git stash list --format='%gd %s'", "git reflog show --format='%gd %gs'", "git log --format='%Cred%h%Creset %Cblue%an'",
		"git for-each-ref --format='%(if)%(upstream)%(then)%(upstream:short)%(end)'", "git log --format=%B -1",
	}
	bad := []string{
		"git log --format='%G?'", "git log --format='%GS %GK'", "git log --pretty=format:%GG", "git log --format=%+GG",
		"git log --pretty=evil", "git log --format=myalias", "git show --format='%h %GF'", "git log --format='%(foo)'",
		"git for-each-ref --format='%(signature)'", "git for-each-ref --format='%(signature:grade)'",
		"git branch --format='%(unknownatom)'", "git log --show-signature", "git log --format='%Cbogus'", "git rev-list --format='%GT' HEAD",
		"git shortlog --format='%GS'", "git stash list --format='%G?'", "git reflog show --format='%GK'", "git log --format='% GP'",
		"git log --format='%-G?'", "git log --format='%<(5)%G?'", "git tag --format='%(signature)'", "git log --format='%'",
		"git cat-file --batch-check='%(signature)'", "git log --format='%(describe'",
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

// TestGitFormatsAgainstGit runs git log with every generated format the
// checker accepts, in a repository whose commit carries a signature and
// whose gpg.program creates a file: the file appearing means an accepted
// format verified the signature.
func TestGitFormatsAgainstGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git found")
	}
	dir := t.TempDir()
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	run("", "init", "-q", ".")
	tree := run("", "hash-object", "-t", "tree", "-w", "--stdin")
	commit := run("tree "+tree+"\nauthor A <a@b> 0 +0000\ncommitter A <a@b> 0 +0000\n"+
		"gpgsig -----BEGIN PGP SIGNATURE-----\n \n xx\n -----END PGP SIGNATURE-----\n\nmsg\n",
		"hash-object", "-t", "commit", "-w", "--stdin")
	run("", "update-ref", "refs/heads/main", commit)
	run("", "symbolic-ref", "HEAD", "refs/heads/main")
	pwned := filepath.Join(dir, "PWNED")
	gpg := filepath.Join(dir, "fakegpg")
	if err := os.WriteFile(gpg, []byte("#!/bin/sh\ntouch "+pwned+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	logWith := func(format string) bool {
		cmd := exec.Command(git, "-c", "gpg.program="+gpg, "log", "--format="+format)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		_ = cmd.Run()
		_, err := os.Stat(pwned)
		os.Remove(pwned)
		return err == nil
	}
	if !logWith("%G?") {
		t.Skip("this git does not run gpg.program for signature placeholders")
	}
	pieces := []string{"%G?", "%GG", "%GS", "%GK", "%GF", "%GP", "%GT", "%+G?", "%-GS", "% GK", "%%G?", "%x25G?", "%C(auto)",
		"%<(5)", "%>>(3,ltrunc)", "%w(20)", "%h", "%an", "%s", "%(describe)", "%(trailers)", "%n", "%%", "G?", "%Cred", "%Creset",
		"%(decorate)", "%gd", "%x", "%(", ")", "%C(", "%<|(4)", "%G", "%"}
	r := rand.New(rand.NewPCG(8, 9))
	accepted := 0
	for range 300 {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		format := b.String()
		if gitPrettyFormat(format) != "" {
			continue
		}
		accepted++
		if logWith(format) {
			t.Errorf("format %q: accepted, but git ran gpg.program", format)
		}
	}
	t.Logf("%d formats accepted and run", accepted)
}
