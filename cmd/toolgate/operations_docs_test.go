package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func readOperations(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestInstallDocs: the documented go install commands name this module
// (go.mod's path) and packages that exist, with a version.
func TestInstallDocs(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(gomod)
	if module == nil {
		t.Fatal("go.mod names no module")
	}
	section := markdownSection(t, readOperations(t), "## Installing a version")
	installs := regexp.MustCompile(`(?m)^(?:CGO_ENABLED=0 )?go install (\S+)@(\S+)$`).FindAllStringSubmatch(strings.Join(fencedBlocks(section, "sh"), ""), -1)
	var pkgs []string
	for _, m := range installs {
		pkg, version := m[1], m[2]
		rel, ok := strings.CutPrefix(pkg, string(module[1])+"/")
		if !ok {
			t.Errorf("go install %s: not in module %s", pkg, module[1])
			continue
		}
		if _, err := os.Stat(filepath.Join(repoRoot, rel, "main.go")); err != nil {
			t.Errorf("go install %s: %v", pkg, err)
		}
		if version != "VERSION" {
			t.Errorf("go install %s@%s: want @VERSION, which the text explains", pkg, version)
		}
		pkgs = append(pkgs, rel)
	}
	if strings.Join(pkgs, " ") != "cmd/toolgate cmd/toolgate-hook" {
		t.Errorf("the section installs %q, want both binaries", pkgs)
	}
}

// TestCheckingAConfigDocs runs each config file the "Checking a config"
// section shows through toolgate validate and compares the output with the
// console block after it.
func TestCheckingAConfigDocs(t *testing.T) {
	section := markdownSection(t, readOperations(t), "## Checking a config")
	if n := len(fencedBlocks(section, "console")); n != 2 {
		t.Fatalf("want two console blocks, found %d", n)
	}
	runConfigConsoles(t, section)
}

// runConfigConsoles writes each yaml block of a docs section to a config
// file of its own, runs the command of the console block after it there,
// and compares the output with the rest of that block. It returns all
// that was printed.
func runConfigConsoles(t *testing.T, section string) string {
	t.Helper()
	files, consoles := fencedBlocks(section, "yaml"), fencedBlocks(section, "console")
	if len(files) == 0 || len(files) != len(consoles) {
		t.Fatalf("want as many yaml as console blocks, found %d and %d", len(files), len(consoles))
	}
	var all strings.Builder
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
		all.WriteString(errOut.String() + out.String())
	}
	return all.String()
}
