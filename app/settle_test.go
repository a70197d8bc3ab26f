package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/server"
)

// slowConfig's first lines are a valid config that allows make deploy;
// only the whole file denies it.
const slowConfig = `policies:
  default:
    permissions:
      allow:
        - "Bash(make *)"
      deny:
        - "Bash(make deploy)"
`

// newTestReloader runs the config at path as serve would.
func newTestReloader(t *testing.T, path string) *reloader {
	t.Helper()
	cfg := loadConfig(t, path)
	g, err := buildGeneration(cfg, nil, "/home/dev", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	// Its idle workers end, as the App's close ends them (a synctest
	// bubble ends only when every goroutine in it has).
	t.Cleanup(g.pool.Close)
	return &reloader{path: path, load: func() (*Config, error) { return LoadConfig(path) }, home: "/home/dev",
		log: zap.NewNop(), cur: g, svc: server.NewService(cfg.Server, g.eng, zap.NewNop())}
}

func decideMakeDeploy(t *testing.T, r *reloader) engine.Decision {
	t.Helper()
	res, err := r.cur.eng.Check(t.Context(), &engine.Request{Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": "make deploy"}},
		WorkingDirectory: t.TempDir(), Mode: engine.ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	return res.Decision
}

// writeSlowly rewrites path in place, a line at a time, pausing between
// lines.
func writeSlowly(t *testing.T, path, content string, pause time.Duration) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	for line := range strings.Lines(content) {
		if _, err := f.WriteString(line); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(pause) // synctest: the fake clock
	}
}

// TestReloadWaitsForASlowWrite: a config rewritten in place a line at a
// time, with pauses shorter than the settle window, is loaded only whole:
// its first lines alone would allow what the whole file denies.
func TestReloadWaitsForASlowWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "toolgate.yaml")
		writeAtomically(t, path, policyDenyMake)
		r := newTestReloader(t, path)
		if d := decideMakeDeploy(t, r); d != engine.Deny {
			t.Fatalf("before: %v", d)
		}
		done := make(chan struct{})
		go func() { writeSlowly(t, path, slowConfig, settleWindow*3/4); close(done) }()
		// The allow rule is on disk, the deny rule not yet.
		time.Sleep(settleWindow * 3) // synctest: the fake clock
		synctest.Wait()
		if err := r.reload(t.Context(), "file change", false); err != nil {
			t.Fatal(err)
		}
		<-done
		if d := decideMakeDeploy(t, r); d != engine.Deny {
			t.Fatalf("after a slow write: %v, want deny", d)
		}
		if !strings.Contains(r.cur.cfg.File.Policies[engine.DefaultPolicy].Permissions.Allow[0], "make") {
			t.Fatalf("the new config was not loaded: %+v", r.cur.cfg.File.Policies)
		}
	})
}

// TestReloadGivesUpOnAFileThatNeverSettles: a file that keeps changing is
// never loaded, the running config stays, and the wait is bounded.
func TestReloadGivesUpOnAFileThatNeverSettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "toolgate.yaml")
		writeAtomically(t, path, policyDenyMake)
		r := newTestReloader(t, path)
		ctx, stop := context.WithCancel(t.Context())
		writing := make(chan struct{})
		go func() {
			defer close(writing)
			for i := 0; ctx.Err() == nil; i++ {
				writeAtomically(t, path, policyNoRules+strings.Repeat("#", i%7)+"\n")
				time.Sleep(settleWindow / 2) // synctest: the fake clock
			}
		}()
		start := time.Now()
		err := r.reload(ctx, "SIGHUP", true)
		if err == nil || !strings.Contains(err.Error(), "still changing") {
			t.Fatalf("reload: %v, want still changing", err)
		}
		if waited := time.Since(start); waited > maxSettleWait+2*settleWindow {
			t.Errorf("waited %s", waited)
		}
		if d := decideMakeDeploy(t, r); d != engine.Deny {
			t.Fatalf("the running config did not stay: %v", d)
		}
		stop()
		<-writing
	})
}

// TestReloadSettleEndsWithTheContext: shutdown does not wait for a file
// to settle.
func TestReloadSettleEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "toolgate.yaml")
		writeAtomically(t, path, policyDenyMake)
		r := newTestReloader(t, path)
		writeAtomically(t, path, policyNoRules)
		ctx, stop := context.WithTimeout(t.Context(), settleWindow/10)
		defer stop()
		start := time.Now()
		if err := r.reload(ctx, "SIGHUP", true); err == nil || !strings.Contains(err.Error(), "settle") {
			t.Fatalf("reload: %v", err)
		}
		if time.Since(start) != settleWindow/10 {
			t.Errorf("returned after %s, want %s", time.Since(start), settleWindow/10)
		}
	})
}
