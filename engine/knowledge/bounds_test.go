package knowledge

import (
	"runtime"
	"strings"
	"testing"
)

// inputLimit is the server's default max_tool_input_bytes: the largest
// glob a tool call can carry.
const inputLimit = 256 << 10

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// TestExpandBracesBounded: globs whose expansion costs the square of their
// length, or doubles at each brace, are refused after a bounded amount of
// work, at the size of the largest tool input; ordinary ones expand.
func TestExpandBracesBounded(t *testing.T) {
	fill := func(unit string) string { return strings.Repeat(unit, inputLimit/len(unit)) }
	for name, g := range map[string]string{
		"sequential": fill("{a}"),
		"doubling":   fill("{a,b}"),
		"nested":     strings.Repeat("{", inputLimit/2) + strings.Repeat("}", inputLimit/2),
		"nested_alt": strings.Repeat("{a,", inputLimit/4) + strings.Repeat("}", inputLimit/4),
		"short_wide": strings.Repeat("{a,b}", 12), // 4096 alternatives
		"long_tail":  "{a,b}" + fill("x"),
	} {
		var ok bool
		if n := allocated(func() { _, ok = ExpandBraces(g, 64) }); n > 4*maxBraceWork+(1<<20) {
			t.Errorf("%s: ExpandBraces allocated %d bytes", name, n)
		}
		if ok {
			t.Errorf("%s: expanded, want refused", name)
		}
		if !NamePicksSecret(g) {
			t.Errorf("%s: NamePicksSecret false, want true (too large to judge)", name)
		}
	}
	for g, want := range map[string]int{"*.{go,md}": 2, "{a,b}{c,d}{e,f}": 8, "{a,{b,c}}": 3, "x": 1, "{a}": 1} {
		alts, ok := ExpandBraces(g, 64)
		if !ok || len(alts) != want {
			t.Errorf("ExpandBraces(%q) = %q, %v; want %d alternatives", g, alts, ok, want)
		}
	}
	if _, ok := ExpandBraces(strings.Repeat("{a,b}", 6), 64); !ok {
		t.Errorf("64 alternatives refused")
	}
	if _, ok := ExpandBraces(strings.Repeat("{a,b}", 7), 64); ok {
		t.Errorf("128 alternatives expanded")
	}
}

// TestMatchSteps: matching costs at most about the glob's length plus the
// square of the name's, whatever the glob (names are at most 255 bytes),
// and the count says so.
func TestMatchSteps(t *testing.T) {
	name := strings.Repeat("a", 255)
	for _, g := range []string{
		strings.Repeat("*a", inputLimit/2) + "*b",
		"*" + strings.Repeat("a", 254) + "b",
		strings.Repeat("*", inputLimit),
		"*[" + strings.Repeat("b", 1000) + "]",
		strings.Repeat("?", 254) + "b",
	} {
		_, _, steps := MatchSteps(g, name)
		if bound := 2*len(g) + 4*len(name)*len(name); steps > bound {
			t.Errorf("MatchSteps(%.20q.., a*255): %d steps, more than %d", g, steps, bound)
		}
		_, _, nsteps := NameMatchSteps(g, name)
		if bound := 4*len(g) + 4*len(name)*len(name); nsteps > bound {
			t.Errorf("NameMatchSteps(%.20q.., a*255): %d steps, more than %d", g, nsteps, bound)
		}
	}
	if m, ok, _ := MatchSteps("*.go", "main.go"); !m || !ok {
		t.Errorf("MatchSteps(*.go, main.go) = %v, %v", m, ok)
	}
}
