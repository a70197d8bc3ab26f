package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/stallfs"
)

// A project whose links, mount points or repository lead onto a FUSE file
// system that never answers: every check is answered at once, and none
// is proven by a local stage.
func TestStalledFUSENotFollowed(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj, stall := root+"/proj", root+"/stall"
	writeFile(t, proj+"/main.go", "package main\n")
	if err := os.Symlink("../stall", proj+"/link"); err != nil {
		t.Fatal(err)
	}
	// A repository whose .git is on the mount, and one below it.
	writeFile(t, root+"/gitlink/main.go", "package main\n")
	if err := os.Symlink(stall+"/repo/.git", root+"/gitlink/.git"); err != nil {
		t.Fatal(err)
	}
	// A tree whose directory is itself a mount point.
	writeFile(t, root+"/tree/a.txt", "x\n")
	stallfs.MountAt(t, stall)
	stallfs.MountAt(t, root+"/tree/mnt")

	e := newHomeEngine(t, nil, nil)
	for _, c := range []struct {
		name string
		cwd  string
		mode Mode
		tool ToolCall
	}{
		{"Read through a link", proj, ModeAuto, readFile(proj + "/link/x")},
		{"Read below the mount", proj, ModeAuto, readFile(stall + "/x")},
		{"Read of the mount point", proj, ModeAuto, readFile(stall)},
		{"Edit through a link", proj, ModeAcceptEdits, editFile("link/x")},
		{"Write through a link", proj, ModeAcceptEdits, tool("Write", map[string]any{"file_path": proj + "/link/new", "content": "x"})},
		{"cat through a link", proj, ModeAuto, bashCmd("cat link/x")},
		{"ls of the link", proj, ModeAuto, bashCmd("ls link")},
		{"ls of a glob through the link", proj, ModeAuto, bashCmd("ls link/*.go")},
		{"grep -r into a mount point", root + "/tree", ModeAuto, bashCmd("grep -r x .")},
		{"Grep into a mount point", root + "/tree", ModeAuto, tool("Grep", map[string]any{"pattern": "x"})},
		{"git status with .git on the mount", root + "/gitlink", ModeAuto, bashCmd("git status")},
		{"git log below the mount", stall + "/repo", ModeAuto, bashCmd("git log")},
		{"git status in the mount", stall, ModeAuto, bashCmd("git status")},
		// A working directory on the mount.
		{"Read in a project on the mount", stall + "/repo", ModeAuto, readFile("main.go")},
		{"Edit in a project on the mount", stall + "/repo", ModeAcceptEdits, editFile("main.go")},
		{"cat in a project on the mount", stall + "/repo", ModeAuto, bashCmd("cat main.go")},
		{"grep -r in a project on the mount", stall + "/repo", ModeAuto, bashCmd("grep -r x .")},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := &Request{Tool: c.tool, WorkingDirectory: c.cwd, Mode: c.mode}
			type answer struct {
				res Result
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := e.Check(t.Context(), req)
				done <- answer{res, err}
			}()
			var a answer
			select {
			case a = <-done:
			case <-time.After(20 * time.Second):
				// A bound far past any answer's time: the check waits on
				// the stalled mount until the test's end aborts it.
				t.Fatal("still waiting on the stalled file system after 20s")
			}
			if a.err != nil {
				t.Fatal(a.err)
			}
			if a.res.Decision == Allow || a.res.Decision == Deny {
				t.Fatalf("%v/%v (%s), want neither allowed nor denied", a.res.Decision, a.res.Source, a.res.Reason)
			}
			if !strings.Contains(a.res.Reason, "leads onto a file system of type fuse, which toolgate does not follow for proofs") {
				t.Errorf("reason %q does not say the path leads onto a fuse file system", a.res.Reason)
			}
		})
	}
}
