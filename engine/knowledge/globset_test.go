package knowledge

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestGlobSetAgreesWithMatch checks the compiled set against the matcher
// glob by glob, on names built from the globs' own pieces (where the
// shapes' edges are) and on random names over their alphabet.
func TestGlobSetAgreesWithMatch(t *testing.T) {
	globs := append([]string{"a*b", "ab*ab", "*", "**", "*a*b*", "x?y", "[ab]*", "*.k\\ey", "*x*", "a*"}, secretNotShaped...)
	for i := range secretShapes {
		globs = append(globs, secretShapes[i].globs...)
	}
	names := []string{"", ".", "a", "ab", "aab", "abab", "aba"}
	alphabet := ""
	for _, g := range globs {
		for _, fill := range []string{"", "a", "xyz", ".", "_"} {
			names = append(names, strings.ReplaceAll(g, "*", fill))
		}
		alphabet += strings.Trim(g, "*?[]\\")
	}
	for i := range secretShapes {
		names = append(names, secretShapes[i].examples...)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(14))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	for _, g := range globs {
		set := newGlobSet([]string{g})
		for _, n := range names {
			n = Fold(n)
			want, _ := match(g, n)
			if got := set.any(n); got != want {
				t.Fatalf("glob %q on %q: set says %v, match says %v", g, n, got, want)
			}
		}
	}
}
