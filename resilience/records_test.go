package resilience

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/approvals/store"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// TestRecordsSurviveSIGKILL: a local server (serve --upstream
// --state-dir) under a load of checks is killed with SIGKILL; restarted,
// it ships from its spool every record it had not shipped, so that every
// check that was answered has its decision record in the centre's SQLite
// store within a deadline.
func TestRecordsSurviveSIGKILL(t *testing.T) {
	bin := sharedToolgate(t)
	cdir := t.TempDir()
	db := filepath.Join(cdir, "approvals.db")
	centreCfg := filepath.Join(cdir, "toolgate.yaml")
	yaml := "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\n  shutdown_timeout: 2s\n" +
		"approvals:\n  store: sqlite\n  sqlite_path: " + db + "\n" +
		"policies:\n  default:\n    permissions:\n      deny: [\"Bash(make deploy)\"]\n"
	if err := os.WriteFile(centreCfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	centre := startServe(t, bin, "--config", centreCfg)
	defer stopServed(t, centre)

	state := filepath.Join(t.TempDir(), "state")
	localArgs := []string{"--upstream", centre.addr, "--state-dir", state, "--listen", "127.0.0.1:0", "--metrics-listen", "off"}
	local := startServe(t, bin, localArgs...)
	client := dialReady(t, local)

	proj, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(proj, "main.go")
	if err := os.WriteFile(file, []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	input, err := structpb.NewStruct(map[string]any{"file_path": file})
	if err != nil {
		t.Fatal(err)
	}

	// The load: N checks from 4 workers, each with its own session, so
	// that the store can be asked for each one's record. The kill comes
	// when a third are answered.
	const n, workers = 2000, 4
	var (
		mu       sync.Mutex
		answered = map[string]string{} // session: decision_id
		next     atomic.Int64
		failed   atomic.Int64
		killOnce sync.Once
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				session := fmt.Sprintf("load-%05d", i)
				res, err := client.Check(t.Context(), &pb.CheckRequest{SessionId: session, Tool: &pb.ToolCall{Name: "Read", Input: input}, WorkingDirectory: proj})
				if err != nil {
					failed.Add(1)
					return // the server is gone
				}
				mu.Lock()
				answered[session] = res.GetDecisionId()
				k := len(answered)
				mu.Unlock()
				if k >= n/3 {
					killOnce.Do(func() { _ = local.cmd.Process.Kill() })
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-local.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed server did not exit")
	}
	if len(answered) >= n || failed.Load() == 0 {
		t.Fatalf("%d of %d checks answered, %d failed: the kill did not come mid-load", len(answered), n, failed.Load())
	}
	t.Logf("killed with %d of %d checks answered", len(answered), n)

	// What reached the centre before the restart.
	st, err := store.OpenSQLite(t.Context(), db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	missing := func() []string {
		var out []string
		for session, id := range answered {
			recs, err := st.QueryRecords(t.Context(), store.RecordFilter{Session: session})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || recs[0].ID != id || recs[0].Decision != "allow" || recs[0].Project != proj || recs[0].Tool != "Read" || recs[0].Host == "" {
				out = append(out, session)
			}
		}
		return out
	}
	before := len(missing())
	t.Logf("%d answered checks had no record at the centre before the restart", before)

	again := startServe(t, bin, localArgs...)
	defer stopServed(t, again)
	deadline := time.Now().Add(20 * time.Second)
	for {
		m := missing()
		if len(m) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d answered checks have no record at the centre 20 s after the restart (first %s)\ncentre:\n%s\nlocal:\n%s",
				len(m), m[0], tail(centre.log(), 3000), tail(again.log(), 3000))
		}
		for session := range answered {
			if !contains(m, session) {
				delete(answered, session) // found: not asked again
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
