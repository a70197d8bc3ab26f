package shell

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// parserLevels counts, on the deepest path of a parsed tree, the nodes for
// which the parser recursed once more: what scanNesting bounds before
// parsing. Chains the parser builds in a loop (&& || | and left-associative
// arithmetic) are not counted; right-recursive ones are.
func parserLevels(f *syntax.File) int {
	deepest := 0
	var stack []syntax.Node
	var levels []int
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			stack, levels = stack[:len(stack)-1], levels[:len(levels)-1]
			return true
		}
		lv := 0
		if len(levels) > 0 {
			lv = levels[len(levels)-1]
		}
		if _, ok := n.(*syntax.IfClause); ok && len(stack) > 0 {
			if _, ok := stack[len(stack)-1].(*syntax.IfClause); ok {
				lv-- // elif and else: read in a loop, not recursively
			}
		}
		switch n := n.(type) {
		case *syntax.Subshell, *syntax.Block, *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause,
			*syntax.CaseClause, *syntax.CmdSubst, *syntax.ProcSubst, *syntax.DblQuoted, *syntax.ArithmExp,
			*syntax.ArithmCmd, *syntax.ParenArithm, *syntax.TestClause, *syntax.ParenTest, *syntax.FuncDecl,
			*syntax.TimeClause, *syntax.CoprocClause, *syntax.LetClause, *syntax.ArrayExpr, *syntax.CStyleLoop,
			*syntax.ExtGlob:
			lv++
		case *syntax.ParamExp:
			if !n.Short || n.Index != nil {
				lv++
			}
		case *syntax.Assign:
			if n.Index != nil {
				lv++
			}
		case *syntax.UnaryArithm:
			lv++
		case *syntax.UnaryTest:
			if n.Op == syntax.TsNot {
				lv++
			}
		case *syntax.BinaryTest:
			if n.Op == syntax.AndTest || n.Op == syntax.OrTest {
				lv++
			}
		case *syntax.BinaryArithm:
			switch n.Op {
			case syntax.TernQuest, syntax.Pow, syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn,
				syntax.QuoAssgn, syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn,
				syntax.ShlAssgn, syntax.ShrAssgn:
				lv++
			}
		}
		deepest = max(deepest, lv)
		stack, levels = append(stack, n), append(levels, lv)
		return true
	})
	return deepest
}

// checkNesting holds scanNesting to its promise on one line: when it
// passes a line that parses, it counted at least the parser's levels.
func checkNesting(t *testing.T, line string) (depth int, why string) {
	t.Helper()
	depth, why = scanNesting(line)
	if why != "" || len(line) > 1<<16 {
		return depth, why
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return depth, why
	}
	if lv := parserLevels(f); lv > depth {
		t.Fatalf("%q: scanNesting counted %d levels, the parser opened %d", line, depth, lv)
	}
	// Without long chains, the tree is shallow enough to walk unmeasured.
	sc := nestScan{src: line, wordsLeft: maxWords}
	sc.scan()
	if !sc.rough && sc.flat <= maxFlat {
		bound := 8*(sc.max+sc.flat) + 16
		if !treeWithin(f, bound) {
			t.Fatalf("%q: tree deeper than %d nodes, with %d levels and chains of %d counted", line, bound, sc.max, sc.flat)
		}
	}
	return depth, why
}

func FuzzNesting(f *testing.F) {
	for _, line := range bypassCorpus {
		f.Add(line)
	}
	for _, line := range harmlessCorpus {
		f.Add(line)
	}
	for _, line := range nestingShapes {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		checkNesting(t, line)
		// A line the guard passes is parsed and analysed; none may panic.
		Analyze(line)
	})
}

// nestingShapes are lines whose nesting the scan must count: each
// construct, deep, and next to quotes and here-documents that hide
// brackets from the parser.
var nestingShapes = []string{
	"echo $((((((1))))))", "( ( ( true ) ) )", "{ { { true; }; }; }", "echo $($($(true)))",
	"cat <(<(<(true)))", `echo "$(echo "$(echo x)")"`, "echo ${x:-${x:-${x:-y}}}", "[[ ( ( a ) ) ]]",
	"if a; then if b; then c; fi; fi", "while a; do while b; do c; done; done",
	"case x in x) case y in y) z;; esac;; esac", "f() g() h() { :; }", "time time time true",
	"echo $((- - - - 1))", "echo $((1?1:1?1:1?1:1))", "echo $((a=b=c=d=1))", "echo $((2**2**2**2))",
	"[[ ! ! ! a ]]", "[[ a && b && c && d ]]", "a[a[a[1]]]=1", "echo ${x:((((1))))}",
	"echo ')' $( echo ')' $( echo ')' ) )", `echo ")" $( echo ")" )`, "echo $(case x in a) b;; esac)",
	"cat <<'EOF'\n)))\nEOF\necho $(echo)", "cat <<EOF\n(((\nEOF\n( ( true ) )", "echo `echo a`",
	"{ echo a; }x; { echo b; }", "for ((i=0;i<3;i++)); do echo; done", "a=(1 (2) 3)", "echo $[1+[2]]",
	"echo ${ echo a; }", "x=1 if true; then :; fi", "for x do if a; then :; fi; done",
}

// TestNestingCorpus holds scanNesting to its promise on every corpus line,
// and checks that it refuses none of the harmless ones.
func TestNestingCorpus(t *testing.T) {
	deepest := 0
	for _, line := range append(append(append([]string{}, harmlessCorpus...), bypassCorpus...), nestingShapes...) {
		depth, _ := checkNesting(t, line)
		deepest = max(deepest, depth)
	}
	for _, line := range harmlessCorpus {
		if _, why := scanNesting(line); why != "" {
			t.Errorf("%q: refused: %s", line, why)
		}
	}
	t.Logf("deepest count over the corpora: %d (bound %d)", deepest, maxNesting)
}

// TestGuardAtSeveralMB: each construct nested or chained through 4 MB, far
// past what overflows the parser's stack (about 142,000 levels of
// $((((..)))) at Go's 1 GB limit, 285 KB of input), is refused before
// it is parsed, with the memory of a few copies of the line.
func TestGuardAtSeveralMB(t *testing.T) {
	const n = 4 << 20
	nest := func(head, open, mid, close string) string {
		k := (n - len(head) - len(mid)) / (len(open) + len(close))
		return head + strings.Repeat(open, k) + mid + strings.Repeat(close, k)
	}
	chain := func(head, unit, tail string) string {
		return head + strings.Repeat(unit, (n-len(head)-len(tail))/len(unit)) + tail
	}
	for name, line := range map[string]string{
		"arithmetic":     nest("echo $((", "(", "1", ")") + "))",
		"subshells":      nest("", "( ", "true", " )"),
		"braces":         nest("", "{ ", "true", "; }"),
		"substitutions":  nest("echo ", "$(", "true", ")"),
		"backquoted":     nest("echo `", "$(", "true", ")") + "`",
		"process_substs": nest("cat ", "<(", "true", ")"),
		"quoted":         nest("echo ", `"$(echo `, "x", `)"`),
		"parameters":     nest("echo ", "${x:-", "y", "}"),
		"funsubs":        nest("echo ", "${ ", "true;", " }"),
		"tests":          nest("[[ ", "( ", "a", " )") + " ]]",
		"ifs":            nest("", "if true; then ", "true", "; fi"),
		"whiles":         nest("", "while true; do ", "true", "; done"),
		"cases":          nest("", "case x in x) ", "true", ";; esac"),
		"arrays":         nest("a=", "(", "x", ")"),
		"indexes":        nest("a", "[a", "1", "]") + "=1",
		"slices":         nest("echo ${x:", "(", "1", ")") + "}",
		"unary":          chain("echo $((", "- ", "1))"),
		"ternary":        chain("echo $((1", "?1:1", "))"),
		"power":          chain("echo $((1", "**1", "))"),
		"assignment":     chain("echo $((a", "=a", "))"),
		"not":            chain("[[ ", "! ", "a ]]"),
		"and":            chain("[[ a", " && a", " ]]"),
		"functions":      chain("", "f() ", "{ :; }"),
		"function_kw":    chain("", "function f ", "{ :; }"),
		"times":          chain("", "time ", "true"),
		"and_list":       chain("true", " && true", ""),
		"pipeline":       chain("true", " | true", ""),
		"words":          chain("echo", " a", ""),
		"heredocs":       chain("", "cat <<A\nA\n", ""),
		"unsure_tail":    "cat <<EOF\n$x\nEOF\n" + nest("", "( ", "true", " )"),
		"let":            chain("let ", "- ", "1"),
	} {
		var a Analysis
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		a = Analyze(line)
		runtime.ReadMemStats(&m1)
		var le *LimitError
		if a.ReadOnly || !errors.As(a.ParseErr, &le) {
			t.Errorf("%s: read-only %v, ParseErr %v; want a bound's refusal", name, a.ReadOnly, a.ParseErr)
		}
		if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 4*n {
			t.Errorf("%s: allocated %d MB", name, alloc>>20)
		}
	}
}
