package engine

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/engine/shell"
)

// The remembered analysis is the analysis: every field as shell.Analyze
// gives it, on the first call and on later ones.
func TestAnalyzeMemoIsTheAnalysis(t *testing.T) {
	e := newEngine(t, nil, nil)
	for _, cmd := range []string{
		"git status",
		"ls -la src | head -20",
		"cat ~/.ssh/id_rsa",
		"rm -rf build && echo done > out.txt",
		"grep -rn TODO . --include='*.go'",
		"echo $(",
		"FOO=1 env | sort",
	} {
		want := shell.Analyze(cmd)
		for i := range 3 {
			if got := e.analyze(t.Context(), cmd); !reflect.DeepEqual(*got, want) {
				t.Fatalf("call %d of %q: got %+v, want %+v", i, cmd, *got, want)
			}
		}
	}
}

// An analysis the check's deadline cut short is not kept: the next check
// of the same command gets the whole analysis.
func TestAnalyzeMemoSkipsCutAnalyses(t *testing.T) {
	e := newEngine(t, nil, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	// Long enough a list that the analysis looks at ctx on the way.
	cmd := strings.Repeat("true; ", 100) + "git status"
	if a := e.analyze(ctx, cmd); a.ReadOnly {
		t.Fatalf("a cancelled analysis of %q is read-only", cmd)
	}
	if a := e.analyze(t.Context(), cmd); !a.ReadOnly {
		t.Fatalf("after a cancelled analysis, %q is not read-only: %s", cmd, a.Reason)
	}
}

// Long commands are analysed each time and never kept, so the memo's size
// stays within maxAnalyses short keys.
func TestAnalyzeMemoKeepsShortKeysOnly(t *testing.T) {
	e := newEngine(t, nil, nil)
	long := "echo " + strings.Repeat("a", maxAnalysisKey)
	e.analyze(t.Context(), long)
	if _, ok := e.analyses.Get(long); ok {
		t.Fatalf("a %d-byte command was kept", len(long))
	}
	e.analyze(t.Context(), "git status")
	if _, ok := e.analyses.Get("git status"); !ok {
		t.Fatal("a short command was not kept")
	}
}
