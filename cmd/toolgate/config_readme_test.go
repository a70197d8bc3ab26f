package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPolicyLayersReadme runs what docs/operations.md's "Policy layers" section
// shows: its YAML is written as toolgate.yaml, each "$ toolgate ..." block
// is run in that directory, and validate must print exactly what the
// documentation shows, config show every line it quotes, in order.
func TestPolicyLayersReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := markdownSection(t, string(readme), "## Policy layers")
	blocks := regexp.MustCompile("(?ms)^```(\\w*)\n(.*?)^```").FindAllStringSubmatch(section, -1)
	var yamlBody string
	var commands [][]string // the command line, then the output lines shown
	for _, b := range blocks {
		switch {
		case b[1] == "yaml":
			yamlBody = b[2]
		case strings.HasPrefix(b[2], "$ toolgate "):
			commands = append(commands, strings.Split(strings.TrimSuffix(b[2], "\n"), "\n"))
		}
	}
	if yamlBody == "" || len(commands) != 2 {
		t.Fatalf("want a yaml block and two commands in the section, found %d blocks", len(blocks))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "toolgate.yaml"), []byte(yamlBody), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, c := range commands {
		args := strings.Fields(strings.TrimPrefix(c[0], "$ toolgate "))
		var out, errOut bytes.Buffer
		if code := run(t.Context(), args, &out, &errOut); code != 0 || errOut.Len() > 0 {
			t.Fatalf("%s: exit %d: %s", c[0], code, errOut.String())
		}
		got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		shown := c[1:]
		if args[0] == "validate" {
			if strings.Join(got, "\n") != strings.Join(shown, "\n") {
				t.Errorf("%s printed\n%s\nthe documentation shows\n%s", c[0], out.String(), strings.Join(shown, "\n"))
			}
			continue
		}
		// An excerpt: each line shown is a line printed, in order.
		i := 0
		for _, line := range got {
			if i < len(shown) && line == shown[i] {
				i++
			}
		}
		if i < len(shown) {
			t.Errorf("%s: the documentation's line %q is not printed (in that order):\n%s", c[0], shown[i], out.String())
		}
	}
}
