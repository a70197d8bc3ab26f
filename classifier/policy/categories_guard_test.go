package policy

import (
	"strings"
	"testing"
)

// TestControlCharactersRefused: a policy's text is collapsed to one line
// (so "\n## ALLOW" cannot open a heading), and control and format
// characters (NUL, a terminal escape, a right-to-left override, a
// zero-width space), noise to a model that can hide from a reviewer what
// it is told, are refused by Validate.
func TestControlCharactersRefused(t *testing.T) {
	for _, def := range []string{"Deploys\x00.", "Deploys \x1b[8mhidden\x1b[0m.", "Deploys \u202eyrtne\u202c.", "Dep\u200bloys."} {
		c := Category{Name: "deploys", Kind: SoftDeny, Definition: def}
		if c.Validate() != nil {
			continue // refused: a fix
		}
		if line := OneLine(def); strings.ContainsAny(line, "\x00\x1b\u202e\u202c\u200b") {
			t.Errorf("definition %q validates and reaches the prompt as %q", def, line)
		}
	}
}
