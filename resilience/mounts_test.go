package resilience

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/internal/stallfs"
)

// TestStalledMountNotFollowed: a project whose links, a directory in it
// and a repository's .git lead onto a FUSE file system that never
// answers. Twice the 8,000 checks that lead there, 64 at a time,
// are each answered in time and none allowed, without a thread left
// waiting in the kernel; ordinary checks keep their answers within a
// second, memory stays bounded, and the server stops in time.
func TestStalledMountNotFollowed(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project, stall := root+"/project", root+"/stall"
	if err := os.MkdirAll(project+"/tree", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(project+"/main.go", []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../stall", project+"/link"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root+"/repo", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(stall+"/.git", root+"/repo/.git"); err != nil {
		t.Fatal(err)
	}
	stallfs.MountAt(t, stall)
	stallfs.MountAt(t, project+"/tree/mnt")
	g := startTarget(t, hostileYAML(denyDeployPolicy))

	edit := shellReq(project, "Edit", map[string]any{"file_path": "link/x", "old_string": "a", "new_string": "b"})
	edit.Mode = pb.PermissionMode_PERMISSION_MODE_ACCEPT_EDITS
	reqs := []*pb.CheckRequest{
		shellReq(project, "Read", map[string]any{"file_path": project + "/link/x"}),
		edit,
		bash(project, "cat link/x"),
		bash(project, "ls link"),
		bash(project, "grep -r x ."),
		bash(root+"/repo", "git status"),
	}
	n := scale(16000)
	var next atomic.Int64
	var mu sync.Mutex
	var problems []string
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				req := reqs[i%int64(len(reqs))]
				if p := hostileProblem(g.check(req)); p != "" {
					mu.Lock()
					if problems = append(problems, p); len(problems) == 1 {
						// The first is enough to tell; the rest would
						// each wait out the answer deadline.
						next.Store(int64(n))
					}
					mu.Unlock()
				}
			}
		})
	}
	// Ordinary checks while the probe runs.
	var slowest time.Duration
	ordinary := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			start := time.Now()
			if err := g.harmless(project); err != nil {
				t.Errorf("an ordinary check during the probe: %v", err)
			}
			slowest = max(slowest, time.Since(start))
			ordinary++
		}
	}
	for _, p := range problems[:min(len(problems), 5)] {
		t.Error(p)
	}
	if slowest > time.Second {
		t.Errorf("the slowest of %d ordinary checks during the probe took %s, over a second", ordinary, slowest)
	}
	threads, err := threadsOf(g.pid())
	if err != nil {
		t.Fatal(err)
	}
	// A check that stepped onto the mount leaves its thread waiting in the
	// kernel until the connection is aborted.
	if threads > 100 {
		t.Errorf("toolgate serve has %d threads after the probe: checks are waiting on the stalled mount", threads)
	}
	rss := g.checkRSS("after checks leading onto a stalled mount")
	if err := g.harmless(project); err != nil {
		t.Errorf("after the probe: %v", err)
	}
	took := g.terminate()
	t.Logf("%d checks onto a stalled FUSE mount: peak RSS %d MiB, %d threads after, %d ordinary checks during (slowest %s), SIGTERM to exit %s",
		n, rss>>20, threads, ordinary, slowest.Round(time.Millisecond), took.Round(time.Millisecond))
}

// threadsOf is the number of threads of process pid.
func threadsOf(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return len(ents), err
}
