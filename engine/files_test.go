package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/toolgate/toolgate/engine/pathcheck"
	"github.com/toolgate/toolgate/internal/attest"
)

// attestationOf is what a client beside the agent attests for dir.
func attestationOf(t *testing.T, dir string) *Attestation {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if attest.BootID() == "" {
		t.Skip("this kernel has no boot id to attest (/proc/sys/kernel/random/boot_id)")
	}
	return &Attestation{BootID: attest.BootID(), Dev: uint64(st.Dev), Ino: st.Ino}
}

// filesUnseen says why this server cannot take the request's paths to be
// the files it sees, or "" when it can (see filesView).
func filesUnseen(req *Request, pr *pathcheck.Proofs) string {
	blind, _, _ := filesView(req, pr)
	return blind
}

// otherNS is a with another mount namespace than this process's.
func otherNS(a *Attestation) *Attestation {
	b := *a
	b.MountNS = attest.View()[0] + 1
	return &b
}

// TestFilesSeen: which callers count as sharing the server's disk.
func TestFilesSeen(t *testing.T) {
	l := newLayout(t)
	here := attestationOf(t, l.app)
	otherDir := attestationOf(t, l.outside)
	otherKernel := *here
	otherKernel.BootID = "00000000-0000-0000-0000-000000000000"
	gone := filepath.Join(l.root, "gone")
	cases := []struct {
		name  string
		wd    string
		files Files
		why   string // "" when seen
	}{
		{"in-process caller", l.app, Files{}, ""},
		{"in-process caller, missing directory", gone, Files{}, ""},
		{"local peer, directory here", l.app, Files{Remote: true, LocalPeer: true}, ""},
		{"attested, same kernel and directory", l.app, Files{Remote: true, Attestation: here}, ""},
		{"attested local peer, same directory", l.app, Files{Remote: true, LocalPeer: true, Attestation: here}, ""},
		{"remote peer, no attestation", l.app, Files{Remote: true}, "sent no attestation"},
		{"local peer, directory missing here", gone, Files{Remote: true, LocalPeer: true}, "cannot be looked at here"},
		{"local peer, no working directory", "", Files{Remote: true, LocalPeer: true}, "names no working directory"},
		{"attested, another kernel", l.app, Files{Remote: true, LocalPeer: true, Attestation: &otherKernel}, "another machine"},
		{"attested, another directory at the path", l.app, Files{Remote: true, LocalPeer: true, Attestation: otherDir}, "another directory"},
		{"local peer, a file as working directory", filepath.Join(l.app, "main.go"), Files{Remote: true, LocalPeer: true}, "not a directory"},
		{"attested from another namespace, from /", "/", Files{Remote: true, Attestation: otherNS(attestationOf(t, "/"))}, "from /"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pr pathcheck.Proofs
			got := filesUnseen(&Request{WorkingDirectory: tc.wd, Files: tc.files}, &pr)
			if tc.why == "" && got != "" || tc.why != "" && !strings.Contains(got, tc.why) {
				t.Fatalf("filesUnseen = %q, want %q", got, tc.why)
			}
		})
	}
}

// TestUnseenFilesProveNothing: every kind of local allow that rests on the
// disk (an edit placed inside the project, a read placed by its path, a
// tree searched, a glob expanded, git's repository found, a command's
// working directory) is allowed when the server sees the agent's files,
// and not allowed when it does not, with the reason saying why; what needs
// no disk is decided as before.
func TestUnseenFilesProveNothing(t *testing.T) {
	l := newLayout(t)
	writeFile(t, filepath.Join(l.app, "README.md"), "hello\n")
	writeFile(t, filepath.Join(l.app, "sub", "a.txt"), "a\n")
	e, err := New(Config{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	onDisk := []struct {
		name string
		call ToolCall
	}{
		{"edit inside", editFile(filepath.Join(l.app, "main.go"))},
		{"write new file", tool("Write", map[string]any{"file_path": filepath.Join(l.app, "new.txt"), "content": "x"})},
		{"read inside", readFile(filepath.Join(l.app, "README.md"))},
		{"read relative", readFile("sub/a.txt")},
		{"grep tree", tool("Grep", map[string]any{"pattern": "API_KEY", "path": l.app})},
		{"glob", tool("Glob", map[string]any{"pattern": "**/*.txt"})},
		{"shell cat", bashCmd("cat README.md")},
		{"shell grep -rn", bashCmd("grep -rn API_KEY sub")},
		{"shell glob", bashCmd("wc -l -- *.go")},
		{"shell cd and cat", bashCmd("cd sub && cat a.txt")},
		{"shell git status", bashCmd("git status")},
	}
	seen := Files{Remote: true, LocalPeer: true}
	unseen := map[string]Files{
		"no attestation": {Remote: true},
		"another dir":    {Remote: true, LocalPeer: true, Attestation: attestationOf(t, l.outside)},
	}
	for _, tc := range onDisk {
		t.Run(tc.name, func(t *testing.T) {
			req := &Request{Tool: tc.call, WorkingDirectory: l.app, Files: seen}
			if res := mustCheck(t, e, req); res.Decision != Allow || res.FilesUnseen != "" {
				t.Fatalf("seen: %v/%v %q (unseen %q): the case must be one the disk proves", res.Decision, res.Source, res.Reason, res.FilesUnseen)
			}
			for name, f := range unseen {
				req := &Request{Tool: tc.call, WorkingDirectory: l.app, Files: f}
				res := mustCheck(t, e, req)
				if res.Decision == Allow {
					t.Errorf("%s: allowed by %v: %q", name, res.Source, res.Reason)
				}
				if !strings.Contains(res.Reason, "not visible to this server") || res.FilesUnseen == "" {
					t.Errorf("%s: reason %q (unseen %q) does not say the files are not visible", name, res.Reason, res.FilesUnseen)
				}
				if strings.Count(res.Reason, "not visible to this server") != 1 {
					t.Errorf("%s: reason %q says it more than once", name, res.Reason)
				}
			}
		})
	}
	noDisk := []struct {
		name string
		call ToolCall
		mode Mode
		want want
		spec PolicySpec
	}{
		{"metadata tool", tool("TodoWrite", map[string]any{"todos": []any{}}), ModeAuto, allowSafe, PolicySpec{}},
		{"echo", bashCmd("echo hello"), ModeAuto, want{d: Allow, s: SourceCommandAnalysis}, PolicySpec{}},
		{"deny rule on a path", editFile(filepath.Join(l.app, "main.go")), ModeAuto, denyRule("Edit(main.go)"), PolicySpec{Permissions: RuleSet{Deny: []string{"Edit(main.go)"}}}},
		{"deny rule on a command", bashCmd("rm -rf build"), ModeAuto, denyRule("Bash(rm *)"), PolicySpec{Permissions: RuleSet{Deny: []string{"Bash(rm *)"}}}},
		{"ask rule", bashCmd("npm publish"), ModeAuto, askRule("Bash(npm publish)"), PolicySpec{Permissions: RuleSet{Ask: []string{"Bash(npm publish)"}}}},
		{"plan mode denies a write", editFile(filepath.Join(l.app, "main.go")), ModePlan, denyMode, PolicySpec{}},
		{"bypass mode runs a command", bashCmd("npm install left-pad"), ModeBypass, allowMode, PolicySpec{}},
		{"classifier-bound", bashCmd("npm install left-pad"), ModeAuto, askNoClf, PolicySpec{}},
	}
	for _, tc := range noDisk {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, policyOf(tc.spec), nil)
			for name, f := range unseen {
				req := &Request{Tool: tc.call, WorkingDirectory: l.app, Mode: tc.mode, Files: f}
				t.Run(name, func(t *testing.T) { tc.want.check(t, mustCheck(t, e, req)) })
			}
		})
	}
}

// TestUnseenChecksLookAtNothing: a check whose files the server does not
// see makes no look at the disk, whatever it names: every walker goes
// through the check's proofs, which refuse. A walker that looked
// elsewhere would make its decision depend on this machine's disk.
func TestUnseenChecksLookAtNothing(t *testing.T) {
	l := newLayout(t)
	if err := os.Symlink("/etc", filepath.Join(l.app, "etclink")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(l.app, ".env"), "API_KEY=x\n")
	e, err := New(Config{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	calls := []ToolCall{
		tool("Write", map[string]any{"file_path": filepath.Join(l.app, "etclink/profile.d/x.sh"), "content": "x"}),
		editFile("main.go"),
		readFile(".env"),
		tool("Grep", map[string]any{"pattern": "x"}),
		tool("Glob", map[string]any{"pattern": "**/*"}),
		tool("LS", map[string]any{"path": l.app}),
		bashCmd("grep -rn API_KEY ."),
		bashCmd("cat etclink/passwd *.go"),
		bashCmd("git status && git log -p"),
		bashCmd("cd sub && ls -la && find . -name '*.go'"),
		bashCmd("go test ./..."),
		bashCmd("npm run build"),
		bashCmd("sed -i s/a/b/ main.go"),
		bashCmd("cp main.go etclink/x"),
		bashCmd("rm -rf sub"),
	}
	for _, c := range calls {
		for _, mode := range []Mode{ModeAuto, ModeAcceptEdits, ModeBypass, ModePlan} {
			stop := pathcheck.CountLookups()
			res := mustCheck(t, e, &Request{Tool: c, WorkingDirectory: l.app, Mode: mode, Files: Files{Remote: true},
				Rules: RuleSet{Allow: []string{"Bash(go test *)", "Bash(npm run *)", "Bash(sed *)", "Bash(cp *)"}}})
			if n := stop(); n.Total() != 0 {
				t.Errorf("%s %v in %v: %+v looks at the disk", c.Name, c.Input, mode, n)
			}
			if res.Decision == Allow && res.Source != SourceMode && res.Source != SourceRule {
				t.Errorf("%s %v in %v: allowed by %v: %q", c.Name, c.Input, mode, res.Source, res.Reason)
			}
		}
	}
}

// TestConfinedView: a client on this kernel that attests the working
// directory this server sees, but another mount namespace or root (a
// container beside the server, a sidecar on the agent's volume), shares
// only that directory: reads under it are proven as for any client, and
// nothing outside it is, not even through a link from inside. Edits are
// not accepted either: whether git takes a directory above the project
// for a repository is a question about directories this server does not
// see as the client does. The same client with this server's namespace
// and root shares everything.
func TestConfinedView(t *testing.T) {
	l := newLayout(t)
	writeFile(t, filepath.Join(l.app, "README.md"), "hello\n")
	if err := os.Symlink("/usr/include/stdio.h", filepath.Join(l.app, "stdio.h")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/usr/include/stdio.h"); err != nil {
		t.Skip("no /usr/include/stdio.h, the read root this test reads")
	}
	e, err := New(Config{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	v := attest.View()
	if v == ([3]uint64{}) {
		t.Skip("this process cannot read its mount namespace and root")
	}
	same := attestationOf(t, l.app)
	same.MountNS, same.RootDev, same.RootIno = v[0], v[1], v[2]
	other := *same
	other.MountNS++
	inside := []ToolCall{
		readFile(filepath.Join(l.app, "README.md")),
		bashCmd("cat README.md"),
		tool("Grep", map[string]any{"pattern": "x", "path": filepath.Join(l.app, "sub")}),
	}
	outside := []ToolCall{
		editFile(filepath.Join(l.app, "main.go")),
		readFile("/usr/include/stdio.h"), // a read root: this server's, not the client's
		readFile(filepath.Join(l.app, "stdio.h")),
		bashCmd("cat stdio.h"),
		bashCmd("cat /usr/include/stdio.h"),
		bashCmd("git status"), // git reads the user's and the system's configuration
		editFile(filepath.Join(l.extra, "x.txt")),
	}
	check := func(a *Attestation, c ToolCall) Result {
		return mustCheck(t, e, &Request{Tool: c, WorkingDirectory: l.app, AdditionalDirectories: []string{l.extra},
			Files: Files{Remote: true, Attestation: a}})
	}
	for _, c := range slices.Concat(inside, outside) {
		if res := check(same, c); res.Decision != Allow {
			t.Errorf("whole view: %s %v: %v/%v %q", c.Name, c.Input, res.Decision, res.Source, res.Reason)
		}
	}
	for _, c := range inside {
		if res := check(&other, c); res.Decision != Allow {
			t.Errorf("confined, inside: %s %v: %v/%v %q", c.Name, c.Input, res.Decision, res.Source, res.Reason)
		}
	}
	for _, c := range outside {
		res := check(&other, c)
		if res.Decision == Allow {
			t.Errorf("confined, outside: %s %v: allowed by %v: %q", c.Name, c.Input, res.Source, res.Reason)
		}
		if !strings.Contains(res.Reason, "not visible to this server") && !strings.Contains(res.Reason, "a directory git may take for a repository") {
			t.Errorf("confined, outside: %s %v: reason %q does not say why", c.Name, c.Input, res.Reason)
		}
	}
}
