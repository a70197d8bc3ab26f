package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestGitProofInAMonorepo: pathspecs are relative to where git runs, the
// index and history to the repository's top above the project; a secret
// elsewhere in the monorepo is left out by a pathspec inside the project
// and covered by one that climbs to it.
func TestGitProofInAMonorepo(t *testing.T) {
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for f, body := range map[string]string{"svc/src/a.go": "package a\n", "other/.env": "K=1\n"} {
		writeFile(t, filepath.Join(top, f), body)
	}
	gitRun(t, top, "init", "-q")
	gitRun(t, top, "add", "-A")
	gitRun(t, top, "commit", "-qm", "c")
	e := newHomeEngine(t, nil, nil)
	project := filepath.Join(top, "svc")
	for cmd, allow := range map[string]bool{
		"git status":                   true,
		"git log --stat":               true,
		"git log -p -- src":            true,
		"git diff HEAD -- src/a.go":    true,
		"git log -p":                   false, // the whole repository's history
		"git log -p -- ../other":       false,
		"git log -p -- ../other/.env":  false,
		"git show HEAD -- ..":          false,
		"git log -p -- 'src/*.go'":     false, // a glob pathspec limits nothing toolgate can tell
		"git log -p -- :/other":        false,
		"git grep -n K -- ../other":    false,
		"git log -p -- src ../other/x": false,
	} {
		res := mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: project, Mode: ModeAuto})
		if (res.Decision == Allow) != allow {
			t.Errorf("%s: %s (%s), want allowed %v", cmd, res.Decision, res.Reason, allow)
		}
	}
}

// TestGitProofKeepsTokensOutOfReasons: a reason reaches logs and the
// agent, so a credential-bearing URL is named by its setting only.
func TestGitProofKeepsTokensOutOfReasons(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "init", "-q")
	gitRun(t, dir, "config", "url.https://bot:SECRETTOKEN@host/.insteadOf", "https://host/")
	gitRun(t, dir, "remote", "add", "origin", "https://u:OTHERTOKEN@host/r.git")
	e := newHomeEngine(t, nil, nil)
	res := mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": "git remote -v"}), WorkingDirectory: dir, Mode: ModeAuto})
	if res.Decision == Allow || strings.Contains(res.Reason, "TOKEN") {
		t.Errorf("git remote -v: %s (%s); want not allowed, with no token in the reason", res.Decision, res.Reason)
	}
	// A setting that is not inert, under a subsection that is a URL.
	gitRun(t, dir, "config", "http.https://bot:THIRDTOKEN@host/.extraheader", "x")
	res = mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": "git status"}), WorkingDirectory: dir, Mode: ModeAuto})
	if res.Decision == Allow || strings.Contains(res.Reason, "TOKEN") {
		t.Errorf("git status with http.<url>.extraheader: %s (%s); want not allowed, with no token in the reason", res.Decision, res.Reason)
	}
}

// TestGitNeedsTheUsersHome: git obeys the user's own config files, so
// where the agent's home directory is not known no git command is local.
func TestGitNeedsTheUsersHome(t *testing.T) {
	dir := t.TempDir()
	gitRun(t, dir, "init", "-q")
	res := mustCheck(t, newEngine(t, nil, nil), &Request{Tool: tool("Bash", map[string]any{"command": "git status"}), WorkingDirectory: dir, Mode: ModeAuto})
	if res.Decision == Allow {
		t.Errorf("git status with no home: allowed (%s)", res.Reason)
	}
	res = mustCheck(t, newHomeEngine(t, nil, nil), &Request{Tool: tool("Bash", map[string]any{"command": "git status"}), WorkingDirectory: dir, Mode: ModeAuto})
	if res.Decision != Allow {
		t.Errorf("git status with a known, empty home: %s (%s), want allow", res.Decision, res.Reason)
	}
}

// TestGitAfterCd: git runs where a static cd leaves it, and obeys the
// repository it finds there: the project's from its root or a plain
// subdirectory, a nested repository's (with its own config) from inside
// that one; never outside the project.
func TestGitAfterCd(t *testing.T) {
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"src", "vendor/lib"} {
		if err := os.MkdirAll(filepath.Join(project, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, project, "init", "-q")
	gitRun(t, filepath.Join(project, "vendor/lib"), "init", "-q")
	gitRun(t, filepath.Join(project, "vendor/lib"), "config", "core.fsmonitor", "./run.sh")
	e := newHomeEngine(t, nil, nil)
	for cmd, allow := range map[string]bool{
		"cd " + project + " && git status --short": true,
		"cd src && git log --oneline -3":           true,
		"cd src; git status":                       true,
		"cd vendor/lib && git status":              false,
		"cd vendor && cd lib && git log":           false,
		"cd .. && git status":                      false,
		"cd /tmp && git status":                    false,
		"cd missing && git status":                 false, // not here to read: on the agent's disk it may be a repository
	} {
		res := mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: project, Mode: ModeAuto})
		if (res.Decision == Allow) != allow {
			t.Errorf("%s: %s (%s), want allowed %v", cmd, res.Decision, res.Reason, allow)
		}
	}
}

// TestGitHooksAllowlist: hooks that fire only on commands that change
// the repository leave read-only commands local; any other hook (one a
// refresh or ref update fires, one git adds later) does not.
func TestGitHooksAllowlist(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "init", "-q")
	e := newHomeEngine(t, nil, nil)
	status := func() Result {
		return mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": "git status"}), WorkingDirectory: dir, Mode: ModeAuto})
	}
	for _, h := range []string{"pre-commit", "commit-msg", "pre-push", "post-checkout"} {
		writeFile(t, filepath.Join(dir, ".git/hooks", h), "#!/bin/sh\n")
	}
	if res := status(); res.Decision != Allow {
		t.Fatalf("git status with commit and push hooks: %s (%s), want allow", res.Decision, res.Reason)
	}
	for _, h := range []string{"post-index-change", "reference-transaction", "some-future-hook"} {
		p := filepath.Join(dir, ".git/hooks", h)
		writeFile(t, p, "#!/bin/sh\n")
		if res := status(); res.Decision == Allow {
			t.Errorf("git status with a %s hook: allowed", h)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}
