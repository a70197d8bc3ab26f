package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApprovalsConfigDocs runs each config file docs/approvals.md's
// Configuration section shows through toolgate validate and compares the
// output with the console block after it.
func TestApprovalsConfigDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "approvals.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := markdownSection(t, string(b), "## Configuration")
	files, consoles := fencedBlocks(section, "yaml"), fencedBlocks(section, "console")
	if len(files) != 2 || len(consoles) != 2 {
		t.Fatalf("want two yaml and two console blocks, found %d and %d", len(files), len(consoles))
	}
	for i, file := range files {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "toolgate.yaml"), []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd, want, _ := strings.Cut(consoles[i], "\n")
		args, ok := strings.CutPrefix(cmd, "$ toolgate ")
		if !ok {
			t.Fatalf("console block %d starts %q", i, cmd)
		}
		t.Chdir(dir)
		var out, errOut bytes.Buffer
		run(t.Context(), strings.Fields(args), &out, &errOut)
		if got := errOut.String() + out.String(); got != want {
			t.Errorf("%s printed\n%s\nthe docs show\n%s", cmd, got, want)
		}
		if strings.Contains(out.String()+errOut.String(), "s3cret") {
			t.Errorf("%s repeated the password", cmd)
		}
	}
}
