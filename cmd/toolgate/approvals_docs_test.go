package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/engine"
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

var (
	docTime   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	docRuleID = regexp.MustCompile(`rule-[A-Z2-7]{26}`)
)

// TestApprovalsCLIDocs runs what docs/approvals.md shows under "Answering
// from the command line" against a central server with the two pending
// calls the page lists, as the approver alice (TOOLGATE_ADDR and
// TOOLGATE_TOKEN_FILE set, as the page says), and compares what each
// command prints with the page, "…" standing for any text. Every
// subcommand the section names in passing takes -h.
func TestApprovalsCLIDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "approvals.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := markdownSection(t, string(b), "## Answering from the command line")
	s := startApprovals(t, true)
	s.offset.Store(int64(-5 * time.Minute))
	infra := s.ask(t, "ci-runner-9", "/builds/infra", "terraform apply -auto-approve", "matches ask rule Bash(terraform apply:*)")
	s.offset.Store(int64(-2 * time.Minute))
	web := s.ask(t, "ci-runner-7", "/builds/web", "npm publish", "matches ask rule Bash(npm publish:*)")
	s.offset.Store(0)
	for _, v := range []string{"TOOLGATE_TLS_CA", "TOOLGATE_TLS_CERT", "TOOLGATE_TLS_KEY"} {
		t.Setenv(v, "")
	}
	t.Setenv("TOOLGATE_ADDR", s.addr)
	t.Setenv("TOOLGATE_TOKEN_FILE", s.alice)

	ran := map[string]bool{}
	for _, block := range fencedBlocks(section, "console") {
		for _, c := range parseConsole(t, block) {
			args := shellWords(t, c.line)
			if len(args) < 2 || args[0] != "toolgate" || args[1] != "approvals" {
				t.Fatalf("$ %s: not a toolgate approvals command", c.line)
			}
			var out, errOut bytes.Buffer
			run(t.Context(), args[1:], &out, &errOut)
			printed := errOut.String() + out.String()
			got := strings.Split(strings.TrimSuffix(printed, "\n"), "\n")
			// Times and rule ids differ from run to run: the page shows
			// one of each, compared as a placeholder.
			for _, lines := range [][]string{got, c.want} {
				for i, l := range lines {
					lines[i] = docRuleID.ReplaceAllString(docTime.ReplaceAllString(l, "TIME"), "rule-ID")
				}
			}
			if !linesMatch(got, c.want) {
				t.Errorf("$ %s\nprinted\n%s\nthe documentation shows\n%s", c.line, printed, strings.Join(c.want, "\n"))
			}
			ran[args[2]] = true
		}
	}
	for _, sub := range []string{"list", "show", "allow", "deny", "rules"} {
		if !ran[sub] {
			t.Errorf("the section runs no toolgate approvals %s", sub)
		}
	}
	for _, c := range []struct {
		name string
		q    queued
		want engine.Decision
	}{{"terraform", infra, engine.Deny}, {"npm", web, engine.Allow}} {
		select {
		case v := <-c.q.done:
			if v.Decision != c.want || v.Info.By != "alice" {
				t.Errorf("the %s check got %+v", c.name, v)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("the %s check was not answered", c.name)
		}
	}
	for _, m := range regexp.MustCompile("`toolgate approvals ([a-z-]+)").FindAllStringSubmatch(section, -1) {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), []string{"approvals", m[1], "-h"}, &out, &errOut); code != 0 {
			t.Errorf("the section names toolgate approvals %s, which is no subcommand: %s", m[1], errOut.String())
		}
	}
}
