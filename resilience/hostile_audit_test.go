package resilience

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// auditRequestIDs returns the request ids of the records in the audit
// files, in order: those the probe gave ("c" and a number; WaitReady's
// checks have generated ones).
func auditRequestIDs(t *testing.T, files ...string) []string {
	t.Helper()
	var ids []string
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r struct {
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %q: %v", path, sc.Text(), err)
			}
			if strings.HasPrefix(r.RequestID, "c") {
				ids = append(ids, r.RequestID)
			}
		}
		f.Close()
	}
	return ids
}

// waitAuditRecords waits until the audit files hold the records of the
// checks want (they are written by a goroutine of the server's own, a
// moment after the answer), at most a few seconds, and returns what they
// hold.
func waitAuditRecords(t *testing.T, want []string, files ...string) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		// A file not made yet, or still the link planted at the path,
		// is not read.
		regular := true
		for _, f := range files {
			if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() {
				regular = false
			}
		}
		var got []string
		if regular {
			got = auditRequestIDs(t, files...)
		}
		if len(got) >= len(want) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond) // another process's file: poll it
	}
}

// TestHostileAudit: an agent in bypass mode cannot remove, move, empty,
// replace or rewrite the audit log, its backups, their directory or the
// classifier's dump file; and when the file is removed or replaced from
// outside (an admin's logrotate, or something toolgate cannot see), every
// later decision is recorded in a new file at the path, none lost.
func TestHostileAudit(t *testing.T) {
	base := t.TempDir()
	project := filepath.Join(base, "project")
	logs := filepath.Join(base, "var", "log", "toolgate")
	for _, d := range []string{project, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(project, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(logs, "audit.jsonl")
	backup := filepath.Join(logs, "audit-2026-01-02T03-04-05.000.jsonl")
	dump := filepath.Join(logs, "classifier-dump.jsonl")
	for _, f := range []string{backup, dump} {
		if err := os.WriteFile(f, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf("server:\n  listen: 127.0.0.1:0\n  shutdown_timeout: %s\n  audit:\n    file: %s\npolicies:\n  default: {}\n", hostileShutdown, audit)
	g := startTarget(t, cfg, "--dump-classifier", dump)

	var sent []string // request ids of every check, in order
	var slowest time.Duration
	send := func(req *pb.CheckRequest) outcome {
		req.RequestId = fmt.Sprintf("c%d", len(sent)) // lowercase: generated ids are not
		sent = append(sent, req.RequestId)
		o := g.check(req)
		if o.err != nil {
			t.Fatalf("%s: %v", req.RequestId, o.err)
		}
		return o
	}
	harmless := func() {
		t.Helper()
		o := send(shellReq(project, "Read", map[string]any{"file_path": filepath.Join(project, "main.go")}))
		slowest = max(slowest, o.took)
		if o.resp.GetDecision() != pb.Decision_DECISION_ALLOW {
			t.Fatalf("a plain Read: %v", o)
		}
		if o.took > time.Second {
			t.Errorf("a plain Read took %s", o.took)
		}
	}
	bypass := func(req *pb.CheckRequest) *pb.CheckRequest {
		req.Mode = pb.PermissionMode_PERMISSION_MODE_BYPASS
		return req
	}

	// An agent in bypass mode: every way at the trail is denied.
	for _, req := range []*pb.CheckRequest{
		bash(project, "rm -f "+audit),
		bash(project, "mv "+audit+" x"),
		bash(project, "> "+audit),
		bash(project, "truncate -s 0 "+audit),
		bash(project, "ln -sf /dev/null "+audit),
		bash(project, "cp /dev/null "+audit),
		bash(project, "rm -rf "+logs),
		bash(project, "rm -rf "+filepath.Join(base, "var")),
		bash(project, "mv "+logs+" /tmp/gone"),
		bash(project, "rm -f "+backup),
		bash(project, "rm -f "+logs+"/audit-*"),
		bash(project, "rm -f "+dump),
		bash(project, "echo '{}' >> "+dump),
		shellReq(project, "Write", map[string]any{"file_path": audit, "content": "{}\n"}),
		shellReq(project, "Edit", map[string]any{"file_path": audit, "old_string": "DENY", "new_string": "ALLOW"}),
		shellReq(project, "Write", map[string]any{"file_path": backup, "content": ""}),
		shellReq(project, "Write", map[string]any{"file_path": dump, "content": ""}),
	} {
		o := send(bypass(req))
		if o.resp.GetDecision() != pb.Decision_DECISION_DENY {
			t.Errorf("bypass %s %v: %v, want DENY", req.GetTool().GetName(), req.GetTool().GetInput().AsMap(), o)
		}
	}
	// Beside the trail, project work in bypass mode goes on.
	if o := send(bypass(bash(project, "rm -rf build && touch notes.txt"))); o.resp.GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Errorf("ordinary bypass work: %v, want ALLOW", o)
	}
	harmless()

	// The records are written by the audit writer, apart from the
	// checks: wait until the file holds them all (before it is removed
	// below, or the last ones would go to the new file).
	if got := waitAuditRecords(t, sent, audit); !slices.Equal(got, sent) {
		t.Errorf("audit records %v of checks %v", got, sent)
	}
	// From outside: removed (an admin, or a command toolgate could not
	// read), renamed away by logrotate, replaced by a link.
	before := len(sent)
	if err := os.Remove(audit); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		harmless()
	}
	// Each step waits until the writer has written the records before it
	// (and so made the file the next step renames).
	waitAuditRecords(t, sent[before:], audit)
	rotated := audit + ".1"
	if err := os.Rename(audit, rotated); err != nil {
		t.Fatal(err)
	}
	harmless()
	waitAuditRecords(t, sent[before:], rotated, audit)
	victim := filepath.Join(base, "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rotated2 := audit + ".2"
	if err := os.Rename(audit, rotated2); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, audit); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		harmless()
	}
	waitAuditRecords(t, sent[before:], rotated, rotated2, audit)
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("a record went through the link planted at the audit path: %q", b)
	}
	if fi, err := os.Lstat(audit); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the audit path after a link was planted: %v, %v; want a regular file", fi, err)
	}

	// logrotate's way: rename, then SIGHUP; the file is made again at once.
	rotated3 := audit + ".3"
	if err := os.Rename(audit, rotated3); err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if _, err := g.waitLog("SIGHUP: audit file reopened", "", 0, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(audit); err != nil {
		t.Errorf("after SIGHUP: %v", err)
	}
	for range 20 {
		harmless()
	}

	rss := g.checkRSS("audit probe")
	g.terminate()
	got := auditRequestIDs(t, rotated, rotated2, rotated3, audit)
	if !slices.Equal(got, sent[before:]) {
		t.Errorf("audit records of the checks after the removal: %d of %d: %v\nwant %v", len(got), len(sent)-before, got, sent[before:])
	}
	t.Logf("%d checks, %d audit records after the removal; peak RSS %d MiB; slowest ordinary check %s", len(sent), len(got), rss>>20, slowest.Round(time.Microsecond))
}
