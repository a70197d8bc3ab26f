package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/upstream"
)

// TestLocalCentralReadme runs what docs/deployment.md's "Local and central
// toolgate" section shows: the local server's config loads with the
// upstream it names and validates; the centre's policies validate and
// serve client_allow_rules as the text says; the serve command starts a
// local server (the address and files made this machine's: nothing
// answers at the address, so it decides with the built-in policy); and
// config show --state-dir prints the lines shown.
func TestLocalCentralReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "deployment.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := fencedSection(t, string(readme), "## Local and central toolgate")
	blocks := regexp.MustCompile("(?ms)^```(\\w*)\n(.*?)^```").FindAllStringSubmatch(section, -1)
	var yamls, commands []string
	for _, b := range blocks {
		switch {
		case b[1] == "yaml":
			yamls = append(yamls, b[2])
		case strings.HasPrefix(b[2], "$ toolgate "):
			commands = append(commands, b[2])
		}
	}
	if len(yamls) != 2 || len(commands) != 2 {
		t.Fatalf("want two yaml blocks and two commands, found %d and %d", len(yamls), len(commands))
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	validate := func(path string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(t.Context(), []string{"validate", path}, &out, &errOut); code != 0 {
			t.Fatalf("validate %s: exit %d: %s%s", path, code, out.String(), errOut.String())
		}
	}

	local := write("local.yaml", yamls[0])
	validate(local)
	cfg, err := app.LoadConfig(local)
	if err != nil {
		t.Fatal(err)
	}
	if u := cfg.Upstream; u.Address != "toolgate.internal.example:443" || !u.TLS.SystemRoots || u.StateDir != "/var/lib/toolgate" || u.Timeout != 8*time.Second || u.RecordsSpoolMaxMB != 256 {
		t.Errorf("the local config's upstream: %+v", u)
	}

	centre := write("centre.yaml", yamls[1])
	validate(centre)
	cc, err := config.Load(centre)
	if err != nil {
		t.Fatal(err)
	}
	doc, version, err := cc.Served()
	if err != nil {
		t.Fatal(err)
	}
	served, err := config.FromServed(doc, "test")
	if err != nil {
		t.Fatal(err)
	}
	if p := served.Policies; *p["default"].ClientAllowRules || !*p["ci"].ClientAllowRules {
		t.Errorf("served client_allow_rules: default %v, ci %v", *p["default"].ClientAllowRules, *p["ci"].ClientAllowRules)
	}

	// The serve command, on this machine's paths and an address where
	// nothing answers.
	state := filepath.Join(dir, "state")
	token := write("upstream.token", "t0ken\n")
	mine := strings.NewReplacer("toolgate.internal.example:443", deadAddr(t), "/etc/toolgate/upstream.token", token, "/var/lib/toolgate", state)
	args := strings.Fields(strings.TrimPrefix(strings.SplitN(commands[0], "\n", 2)[0], "$ toolgate "))
	if args[0] != "serve" {
		t.Fatalf("first command %q", commands[0])
	}
	for i := range args {
		args[i] = mine.Replace(args[i])
	}
	addr, logs := startServeLogs(t, args[1:]...)
	if !strings.Contains(logs(), "deciding with the built-in policy") {
		t.Errorf("serve %v:\n%s", args, logs())
	}
	var out, errOut bytes.Buffer
	run(t.Context(), []string{"check", "--addr", addr, "--tool", "Bash", "--input", `{"command":"npm install evil-pkg"}`, "--allow", "Bash(npm install *)"}, &out, &errOut)
	if !strings.Contains(out.String(), "allow rule(s) the client sent were ignored") || strings.Contains(out.String(), "DECISION_ALLOW") {
		t.Errorf("a client allow rule under the built-in policy served as a centre's: %s %s", out.String(), errOut.String())
	}

	// config show --state-dir, on a kept copy as the documentation describes it.
	received, _ := time.Parse(time.RFC3339, "2026-11-27T09:00:00Z")
	if err := upstream.SaveState(state, &upstream.Saved{Version: version, Upstream: "toolgate.internal.example:443", Received: received, Document: string(doc)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(commands[1], "\n"), "\n")
	args = strings.Fields(mine.Replace(strings.TrimPrefix(lines[0], "$ toolgate ")))
	out.Reset()
	errOut.Reset()
	if code := run(t.Context(), args, &out, &errOut); code != 0 {
		t.Fatalf("%s: exit %d: %s", lines[0], code, errOut.String())
	}
	got := regexp.MustCompile(`sha256:[0-9a-f]{64}`).ReplaceAllString(out.String(), "sha256:…")
	got = strings.ReplaceAll(got, state, "/var/lib/toolgate")
	i := 0
	for _, line := range strings.Split(got, "\n") {
		if i < len(lines)-1 && line == lines[i+1] {
			i++
		}
	}
	if i < len(lines)-1 {
		t.Errorf("%s: the documentation's line %q is not printed (in that order):\n%s", lines[0], lines[i+1], got)
	}
}

// fencedSection is markdownSection for a section whose code blocks hold
// lines that look like headings (YAML comments): lines inside ``` fences
// do not end it.
func fencedSection(t *testing.T, doc, heading string) string {
	t.Helper()
	level := strings.Index(heading, " ")
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if l != heading {
			continue
		}
		fenced := false
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "```") {
				fenced = !fenced
			}
			if n := len(lines[j]) - len(strings.TrimLeft(lines[j], "#")); !fenced && n > 0 && n <= level && strings.HasPrefix(lines[j][n:], " ") {
				return strings.Join(lines[i:j], "\n")
			}
		}
		return strings.Join(lines[i:], "\n")
	}
	t.Fatalf("no %q heading", heading)
	return ""
}
