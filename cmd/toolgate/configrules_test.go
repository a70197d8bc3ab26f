package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/approvals/store"
)

// TestConfigShowLearnedRules: config show lists, after the policies, the
// rules approvers taught that are in force in the config's approvals
// store, one comment line each with their scope, teacher and expiry; an
// expired rule is not listed; a store that does not exist yet is said to
// hold none and is not created.
func TestConfigShowLearnedRules(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "approvals.db")
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte("approvals:\n  sqlite_path: "+db+"\npolicies:\n  default: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	show := func() string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), []string{"config", "show", "--config", cfg}, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
			t.Fatalf("config show: exit %d, stderr %s", code, stderr.String())
		}
		return stdout.String()
	}
	if out := show(); !strings.Contains(out, "# learned rules (approvals store SQLite "+db+"): none, the store does not exist yet") {
		t.Errorf("no store yet:\n%s", out)
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatal("config show created the store")
	}

	st, err := store.OpenSQLite(t.Context(), db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, r := range []store.Rule{
		{ID: "rule-1", Text: "Bash(npm publish)", Project: "/work/app", Policy: "default", CreatedBy: "alice", CreatedAt: now, ExpiresAt: now.Add(time.Hour), PendingID: "ap-1"},
		{ID: "rule-2", Text: "Bash(echo x\n# injected)", Project: "/work/app", Policy: "default", CreatedBy: "bob", CreatedAt: now, ExpiresAt: now.Add(time.Hour), PendingID: "ap-2"},
		{ID: "rule-old", Text: "Bash(make deploy)", Project: "/work/app", Policy: "default", CreatedBy: "carol", CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour)},
	} {
		if err := st.AddRule(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	out := show()
	for _, want := range []string{
		"# learned rules in force (approvals store SQLite " + db + "): 2\n",
		`#   allow "Bash(npm publish)" in project "/work/app", policy default, taught by "alice", until `,
		`(rule-1, from ap-1)`,
		`#   allow "Bash(echo x\n# injected)"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "make deploy") || strings.Contains(out, "\n# injected") {
		t.Errorf("an expired rule listed, or a rule's text broke its comment:\n%s", out)
	}
}
