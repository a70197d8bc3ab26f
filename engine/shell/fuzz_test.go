package shell

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func FuzzAnalyze(f *testing.F) {
	for _, line := range bypassCorpus {
		f.Add(line)
	}
	for _, line := range harmlessCorpus {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		a := Analyze(line)
		if !a.ReadOnly {
			if a.Reason == "" {
				t.Fatalf("%q: not read-only without a reason", line)
			}
			return
		}
		checkReadOnlyInvariants(t, line, a)
	})
}

// checkReadOnlyInvariants verifies, independently of the analyzer's walk,
// properties every read-only verdict must have.
func checkReadOnlyInvariants(t *testing.T, line string, a Analysis) {
	t.Helper()
	if a.ParseErr != nil || a.Reason != "" || len(a.Writes) > 0 || len(a.Commands) == 0 {
		t.Fatalf("%q: read-only with %+v", line, a)
	}
	for _, c := range a.Commands {
		if len(c.Env) > 0 || programs[c.Argv[0]] == nil {
			t.Fatalf("%q: read-only with command %+v", line, c)
		}
	}
	f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil {
		t.Fatalf("%q: read-only but does not re-parse: %v", line, err)
	}
	known := func(call *syntax.CallExpr) bool {
		w := wordOf(call.Args[0], line)
		name, why := progName(&w)
		return why == "" && (programs[name] != nil || wrappers[name] != nil)
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Redirect:
			switch n.Op {
			case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll,
				syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
				if w := wordOf(n.Word, line); !w.is("/dev/null") {
					t.Fatalf("%q: read-only with a redirect to %s", line, w.val)
				}
			}
		case *syntax.CallExpr:
			// Only a plain statement of plain assignments to lower-case
			// names bash gives no meaning may be read-only: never a
			// prefix to a command, an append, an array or an index.
			for _, as := range n.Assigns {
				name := as.Name.Value
				if len(n.Args) > 0 || as.Append || as.Naked || as.Array != nil || as.Index != nil ||
					name != strings.ToLower(name) || name == "_" || name == "histchars" || name == "auto_resume" || strings.HasSuffix(name, "_proxy") {
					t.Fatalf("%q: read-only with the assignment %s", line, name)
				}
			}
		case *syntax.CmdSubst, *syntax.ProcSubst:
			syntax.Walk(n, func(m syntax.Node) bool {
				if call, ok := m.(*syntax.CallExpr); ok && len(call.Args) > 0 && !known(call) {
					t.Fatalf("%q: read-only with unknown program in a substitution", line)
				}
				return true
			})
		case *syntax.FuncDecl, *syntax.DeclClause, *syntax.LetClause, *syntax.CoprocClause, *syntax.ArithmCmd:
			t.Fatalf("%q: read-only with %T", line, n)
		}
		return true
	})
}

// TestCorpusInvariants runs the fuzz invariants over the corpora without
// the fuzzing engine.
func TestCorpusInvariants(t *testing.T) {
	for _, line := range harmlessCorpus {
		if a := Analyze(line); a.ReadOnly {
			checkReadOnlyInvariants(t, line, a)
		}
	}
}
