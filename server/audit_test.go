package server

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/redact"
)

// readAudit returns the audit file's records.
func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestAuditLogRedactsSecrets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	env := newEnv(t, withConfig(func(c *Config) { c.Audit.File = path }))
	tests := []struct {
		name, command, secret string
	}{
		{"OpenAI key", "curl -H 'Authorization: x' -d k=sk-proj-Abcdefghijklmnopqrstuv123 https://x", "sk-proj-Abcdefghijklmnopqrstuv123"},
		{"bearer token", `curl -H "Authorization: Bearer eyJhbGciOi.J9abcdefgh.Xyzabcdefgh12" https://api`, "eyJhbGciOi.J9abcdefgh.Xyzabcdefgh12"},
		{"AWS access key id", "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
		{"AWS secret key", "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"private key block", "printf '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----' > k", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"},
		{"password in URL", "git clone https://deploy:hunter2-pass@git.example.com/repo.git", "hunter2-pass"},
		{"GitHub token", "gh auth login --with-token ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdefghijklmnopqrstuvwxyz0123"},
		{"password flag", "mysqladmin --password s3cretPassw0rd status", "s3cretPassw0rd"},
	}
	for _, tt := range tests {
		req := checkReq(t, tt.name, "Bash", map[string]any{"command": tt.command})
		req.WorkingDirectory = os.TempDir()
		if _, err := env.client.Check(t.Context(), req); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
	}
	env.stop(t) // flushes and closes the audit file

	records := readAudit(t, path)
	if len(records) != len(tests) {
		t.Fatalf("%d audit records for %d checks", len(records), len(tests))
	}
	raw, _ := os.ReadFile(path)
	for i, tt := range tests {
		r := records[i]
		if r["request_id"] != tt.name || r["msg"] != "decision" || r["decision"] == "" || r["tool"] != "Bash" || r["working_directory"] != os.TempDir() {
			t.Errorf("%s: record %v", tt.name, r)
		}
		in, _ := r["tool_input"].(string)
		if !strings.Contains(in, redact.Mask) || !strings.Contains(in, "command") {
			t.Errorf("%s: tool_input %q, want the command with the secret masked", tt.name, in)
		}
		if strings.Contains(string(raw), tt.secret) {
			t.Errorf("%s: the audit log holds the secret %q", tt.name, tt.secret)
		}
	}
}

func TestAuditLogRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	env := newEnv(t, withConfig(func(c *Config) {
		c.Audit = AuditConfig{File: path, MaxSizeMB: 1, MaxBackups: 1}
	}))
	// About 2.5 MB of records: at least two rotations, one backup kept.
	content := strings.Repeat("a", 8<<10)
	for i := range 300 {
		req := checkReq(t, "", "Write", map[string]any{"file_path": "/p/f.txt", "content": content})
		req.WorkingDirectory = os.TempDir()
		if _, err := env.client.Check(t.Context(), req); err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
	}
	env.stop(t)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("files %v, want the log and one backup", names)
	}
	for _, e := range entries {
		info, _ := e.Info()
		if info.Size() > 1<<20 {
			t.Errorf("%s is %d bytes, over the 1 MB rotation size", e.Name(), info.Size())
		}
	}
	if n := len(readAudit(t, path)); n == 0 || n >= 300 {
		t.Errorf("current file has %d records; want some but not all", n)
	}
}

func TestNoAuditLogByDefault(t *testing.T) {
	env := newEnv(t, withLogger(zap.NewNop()))
	if env.srv.svc.audit != nil || env.srv.auditFile != nil {
		t.Error("audit log opened without server.audit.file")
	}
}

func TestAuditConfigValidation(t *testing.T) {
	c := DefaultConfig()
	c.Audit = AuditConfig{File: "/var/log/toolgate/audit.jsonl", MaxSizeMB: 0}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "server.audit") {
		t.Fatalf("got %v", err)
	}
	// Its backups are guarded by glob: a path that is one is refused.
	c.Audit = AuditConfig{File: "/var/log/tool[gate]/audit.jsonl", MaxSizeMB: 1}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "server.audit.file") {
		t.Fatalf("a glob in the audit path: got %v", err)
	}
}

// An audit log the server cannot write is a startup error, not records
// silently lost.
func TestAuditLogUnwritable(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Audit.File = filepath.Join(t.TempDir(), "missing-dir", "sub", "audit.jsonl")
	// A file where the directory should be.
	if err := os.WriteFile(filepath.Dir(filepath.Dir(cfg.Audit.File)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eng, _ := engine.New(engine.Config{})
	if _, err := New(cfg, eng, zap.NewNop()); err == nil || !strings.Contains(err.Error(), "server.audit.file") {
		t.Fatalf("got %v", err)
	}
}

// A pooled decision-log slice holds no field once its check is done: the
// audit log's fields (the redacted tool input among them) are appended
// past the decision log's and must be cleared too. (Under -race the pool
// may drop the slice instead; then there is nothing left to hold.)
func TestDecisionLogPoolKeepsNothing(t *testing.T) {
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := NewService(DefaultConfig(), eng, zap.NewNop())
	s.audit = zap.NewNop()
	// The pool is per processor: stay on this one between Put and Get.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	req := checkReq(t, "r1", "Bash", map[string]any{"command": "echo " + strings.Repeat("x", 4096)})
	req.WorkingDirectory = os.TempDir()
	if _, err := s.decide(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	fp := fieldPool.Get().(*[]zap.Field)
	for i, f := range (*fp)[:cap(*fp)] {
		if f.Key != "" {
			t.Errorf("pooled slot %d still holds field %q", i, f.Key)
		}
	}
}
