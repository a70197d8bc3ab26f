package shell

import (
	"slices"
	"testing"
)

// TestLoopWords: a for loop's variable over static words stands, quoted,
// for each of them in its body; anything that may set it, split it or
// make it an option keeps it a run-time word.
func TestLoopWords(t *testing.T) {
	ok := map[string][]string{
		`for f in src/*.go; do head -5 "$f"; done`:                                {"src/*.go"},
		`for f in src/*.go docs/*.md; do echo "== $f"; head -3 "$f"; done`:        {"src/*.go", "docs/*.md"},
		`for f in src/*.go; do grep -n TODO "$f"; done`:                           {"src/*.go"},
		`for f in src/*.go; do wc -l "$f"; done`:                                  {"src/*.go"},
		`for f in ./*.md; do echo "$(head -1 "$f")"; done`:                        {"./*.md"},
		`for f in go.mod go.sum; do cat "${f}"; done`:                             {"go.mod", "go.sum"},
		`for d in cmd/*/; do for f in src/*.go; do cat "$f"; ls "$d"; done; done`: {"src/*.go", "cmd/*/"},
	}
	for line, reads := range ok {
		a := Analyze(line)
		if !a.ReadOnly {
			t.Errorf("Analyze(%q): not read-only (%s)", line, a.Reason)
			continue
		}
		for _, r := range reads {
			if !slices.Contains(a.Reads, r) {
				t.Errorf("Analyze(%q).Reads = %q, want %q among them", line, a.Reads, r)
			}
		}
	}
	bad := []string{
		`for f in src/*.go; do head -5 $f; done`,             // splits at blanks in a name
		`for f in *.go; do wc -l "$f"; done`,                 // may start with "-"
		`for f in -n src/a; do cat "$f"; done`,               // is an option
		`for f in src/*.go; do f=.env; cat "$f"; done`,       // set in the body
		`for f in src/*.go; do read -r f; cat "$f"; done`,    // set by read
		`for f in src/*.go; do printf -vf x; cat "$f"; done`, // set by printf -v
		`for f in src/*.go; do read -r "f"; cat "$f"; done`,
		`for f in src/*.go; do : "${f:=.env}"; cat "$f"; done`,
		`for f in $(ls); do cat "$f"; done`, // split run-time words
		`for f in "$@"; do cat "$f"; done`,
		`for f in ~/.ssh/*; do cat "$f"; done`,
		`for f in src/*.go; do cat "$f"; done > out`,
		`for f in src/*.go; do cat "$f.bak$x"; done`,
		`for f in src/*.go; do bash -c "cat $f"; done`,
		`for f in a b c d e f g h i; do cat "$f"; done`, // more words than judged
	}
	for _, line := range bad {
		if a := Analyze(line); a.ReadOnly {
			t.Errorf("Analyze(%q): read-only, want not", line)
		}
	}
}
