package shell

import (
	"slices"
	"strings"
	"testing"
)

// TestToolchainAttribute: every allowed use of a program whose spec names
// a toolchain family reports it, with where it runs, and no other
// program's does.
func TestToolchainAttribute(t *testing.T) {
	for name, c := range programCases {
		sp := programs[name]
		if sp == nil {
			continue
		}
		for _, line := range c.ok {
			a := Analyze(line)
			got := slices.ContainsFunc(a.Toolchains, func(tc Toolchain) bool { return tc.Family == sp.toolchain && tc.Dir == "." })
			switch {
			case sp.toolchain != "" && !got:
				t.Errorf("Analyze(%q).Toolchains = %+v, want family %q in .", line, a.Toolchains, sp.toolchain)
			case sp.toolchain == "" && slices.ContainsFunc(a.Toolchains, func(tc Toolchain) bool { return strings.Fields(tc.Program)[0] == name }):
				t.Errorf("Analyze(%q).Toolchains = %+v, want none", line, a.Toolchains)
			}
		}
	}
	// After a static cd both places count; after one known only at run
	// time nothing does.
	a := Analyze("cd sub && go version")
	if !a.ReadOnly || len(a.Toolchains) != 2 || a.Toolchains[1].Dir != "sub/." {
		t.Errorf("cd sub && go version: %+v (%s), want . and sub/.", a.Toolchains, a.Reason)
	}
	if a := Analyze(`cd "$d" && node --version`); a.ReadOnly {
		t.Errorf("cd to a run-time directory, then node: read-only")
	}
}
