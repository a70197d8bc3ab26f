package knowledge

import (
	"math/rand/v2"
	"path"
	"testing"
)

func TestNameMatch(t *testing.T) {
	tests := []struct {
		g, name     string
		matched, ok bool
	}{
		{".git", ".git", true, true},
		{".git", ".GIT", false, true}, // case counts, as in fnmatch
		{".GIT", ".git", false, true},
		{"*", ".git", true, true}, // a leading dot is no special case
		{"?git", ".git", true, true},
		{".g*", ".git", true, true},
		{"*.js", ".q.js", true, true},
		{"node_modules", "node_modules", true, true},
		{"*.egg-info", "x.egg-info", true, true},
		{"*.egg-info", "x.egg", false, true},
		{"a?c", "abc", true, true},
		{"a?c", "ac", false, true},
		{"[.]git", ".git", false, false},
		{"\\.git", ".git", false, false},
		{"a/b", "b", false, false},
		{"", "", false, false},
		{"é*", "é", false, false},
		{"?", "é", false, false}, // fnmatch counts characters of the locale
		{"*", "é", true, true},
	}
	for _, tt := range tests {
		if m, ok := NameMatch(tt.g, tt.name); m != tt.matched || ok != tt.ok {
			t.Errorf("NameMatch(%q, %q) = %v, %v, want %v, %v", tt.g, tt.name, m, ok, tt.matched, tt.ok)
		}
	}
}

// TestNameMatchAgainstPathMatch compares NameMatch with path.Match, which
// reads '*', '?' and plain characters as fnmatch(3) without flags does
// for names without a slash.
func TestNameMatchAgainstPathMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(alphabet string, n int) string {
		b := make([]byte, r.IntN(n+1))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20000 {
		g, name := word("ab.*?", 6), word("ab.", 5)
		m, ok := NameMatch(g, name)
		if g == "" {
			if ok {
				t.Errorf("NameMatch(%q, %q): ok for an empty glob", g, name)
			}
			continue
		}
		want, err := path.Match(g, name)
		if err != nil || !ok || m != want {
			t.Errorf("NameMatch(%q, %q) = %v, %v; path.Match says %v (%v)", g, name, m, ok, want, err)
		}
	}
}
