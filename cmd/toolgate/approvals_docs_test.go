package main

import (
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
	if n := len(fencedBlocks(section, "console")); n != 2 {
		t.Fatalf("want two console blocks, found %d", n)
	}
	if out := runConfigConsoles(t, section); strings.Contains(out, "s3cret") {
		t.Error("toolgate validate repeated the password")
	}
}
