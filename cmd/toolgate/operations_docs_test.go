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

// TestCommandListDocs: every command the synopsis in docs/operations.md's
// "Running it" lists exists and takes -h, and every flag it shows is
// one that command's help lists (toolgate approvals: each subcommand's).
func TestCommandListDocs(t *testing.T) {
	t.Setenv("TOOLGATE_UNATTENDED", "")
	section := markdownSection(t, readOperations(t), "## Running it")
	blocks := regexp.MustCompile("(?ms)^```\n(.*?)^```").FindStringSubmatch(section)
	if blocks == nil {
		t.Fatal("no synopsis block")
	}
	flagRE := regexp.MustCompile(`--[a-z][a-z-]*`)
	help := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run(t.Context(), append(args, "-h"), &out, &errOut)
		if want := 0; args[0] == "hook" {
			want = 2 // a hook's help blocks, as its every failure
			if code != want {
				t.Errorf("toolgate %s -h: exit %d, want %d", strings.Join(args, " "), code, want)
			}
		} else if code != want {
			t.Errorf("toolgate %s -h: exit %d, want %d: %s", strings.Join(args, " "), code, want, errOut.String())
		}
		return out.String() + errOut.String()
	}
	seen := map[string]bool{}
	var cmd string
	for _, line := range strings.Split(blocks[1], "\n") {
		words := strings.Fields(line)
		if len(words) >= 2 && words[0] == "toolgate" {
			cmd = words[1]
			seen[cmd] = true
		}
		if cmd == "" || len(words) == 0 {
			continue
		}
		if cmd == "approvals" && words[0] == "toolgate" {
			// Each alternative is a subcommand with its own flags.
			for _, alt := range strings.Split(strings.Join(words[2:], " "), " | ") {
				sub := strings.Fields(alt)
				h := help("approvals", sub[0])
				for _, f := range flagRE.FindAllString(alt, -1) {
					if !strings.Contains(h, "-"+strings.TrimPrefix(f, "--")+" ") && !strings.Contains(h, "-"+strings.TrimPrefix(f, "--")+"\n") {
						t.Errorf("toolgate approvals %s: the synopsis shows %s, which its help does not list:\n%s", sub[0], f, h)
					}
				}
			}
			continue
		}
		h := help(cmd)
		for _, f := range flagRE.FindAllString(strings.SplitN(line, "(", 2)[0], -1) {
			name := strings.TrimPrefix(f, "--")
			if !strings.Contains(h, "-"+name+" ") && !strings.Contains(h, "-"+name+"\n") && !strings.Contains(h, "-"+name+"=") {
				t.Errorf("toolgate %s: the synopsis shows %s, which its help does not list", cmd, f)
			}
		}
	}
	for _, c := range []string{"serve", "check", "eval", "validate", "config", "hook", "approvals", "version"} {
		if !seen[c] {
			t.Errorf("the synopsis lists no toolgate %s", c)
		}
	}
}
