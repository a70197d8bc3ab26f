package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// inputLimit is the server's default max_tool_input_bytes.
const inputLimit = 256 << 10

// fill repeats unit between head and tail to about n bytes.
func fill(head, unit, tail string, n int) string {
	return head + strings.Repeat(unit, (n-len(head)-len(tail))/len(unit)) + tail
}

// nest builds head + open*k + mid + close*k + tail in about n bytes.
func nest(head, open, mid, close, tail string, n int) string {
	k := (n - len(head) - len(tail) - len(mid)) / (len(open) + len(close))
	return head + strings.Repeat(open, k) + mid + strings.Repeat(close, k) + tail
}

// hostileCalls are tool calls of about n bytes each that once crashed,
// stalled or bloated a check: nesting that overflowed the parser's stack,
// brace globs whose expansion grew with the square of their length, chains
// of cd whose paths did, and the like.
func hostileCalls(dir string, n int) map[string]ToolCall {
	bash := func(s string) ToolCall { return ToolCall{Name: "Bash", Input: map[string]any{"command": s}} }
	return map[string]ToolCall{
		"arithmetic":       bash(nest("echo $((", "(", "1", ")", "))", n)),
		"subshells":        bash(nest("", "( ", "true", " )", "", n)),
		"braces":           bash(nest("", "{ ", "true", "; }", "", n)),
		"substitutions":    bash(nest("echo ", "$(", "true", ")", "", n)),
		"process_substs":   bash(nest("cat ", "<(", "true", ")", "", n)),
		"quoted_substs":    bash(nest("echo ", `"$(echo `, "x", `)"`, "", n)),
		"parameters":       bash(nest("echo ", "${x:-", "y", "}", "", n)),
		"tests":            bash(nest("[[ ", "( ", "a", " )", " ]]", n)),
		"ifs":              bash(nest("", "if true; then ", "true", "; fi", "", n)),
		"cases":            bash(nest("", "case x in x) ", "true", ";; esac", "", n)),
		"indexes":          bash(nest("a", "[a", "1", "]", "=1", n)),
		"unary_chain":      bash(fill("echo $((", "- ", "1))", n)),
		"ternary_chain":    bash(fill("echo $((1", "?1:1", "))", n)),
		"not_chain":        bash(fill("[[ ", "! ", "a ]]", n)),
		"function_chain":   bash(fill("", "f() ", "{ :; }", n)),
		"and_chain":        bash(fill("true", " && true", "", n)),
		"pipe_chain":       bash(fill("true", " | true", "", n)),
		"cd_chain":         bash(fill("cd a", " && cd b", " && cat x", n)),
		"words":            bash(fill("echo", " a", "", n)),
		"continuations":    bash(fill("echo", " a \\\n", " a", n)),
		"heredocs":         bash(fill("", "cat <<A\nA\n", "", n)),
		"backquotes":       bash(fill("echo", " `a`", "", n)),
		"wrapped_paths":    bash(fill("sudo", " a/b", "", n)),
		"jq_interpolation": bash("jq '" + nest("", `"\(`, "1", `)"`, "", n-10) + "' f"),
		"grep_include":     bash(fill("grep -r --include='", "{a}", "' x .", n)),
		"grep_include_alt": bash(fill("grep -r --include='", "{a,b}", "' x .", n)),
		"find_name":        bash(fill("find . -type f -name '", "{a}", "' -print0 | xargs -0 cat", n)),
		"cat_star":         bash("cat " + fill("", "*a", "*b", n)),
		"cat_many":         bash(fill("cat", " f", "", n)),
		"grep_many_trees":  bash(fill("grep -r x", " .", "", n)),
		"cat_distinct":     bash("cat" + distinct(" ./f%d/../f%d", n-3)),
		"grep_distinct":    bash("grep -r x" + distinct(" ./d%d/../d%d", n-9)),
		"Grep_glob":        {Name: "Grep", Input: map[string]any{"pattern": "x", "path": dir, "glob": fill("", "{a}", "", n)}},
		"Grep_glob_alt":    {Name: "Grep", Input: map[string]any{"pattern": "x", "path": dir, "glob": fill("", "{a,b}", "", n)}},
		"Read_star":        {Name: "Read", Input: map[string]any{"file_path": dir + "/" + fill("", "*a", "*b", n)}},
		"Read_deep":        {Name: "Read", Input: map[string]any{"file_path": dir + fill("", "/*", "", n)}},
	}
}

// distinct repeats format (two %d verbs) with a counter, as many times
// as fit in n bytes and below the bound on words: distinct paths to judge.
func distinct(format string, n int) string {
	var b strings.Builder
	for i := 0; i < 19_000; i++ {
		w := fmt.Sprintf(format, i, i)
		if b.Len()+len(w) > n {
			break
		}
		b.WriteString(w)
	}
	return b.String()
}

// readOnly are the hostile shapes that are read-only when they are within
// the bounds: cat f f f .. may well be allowed.
var readOnly = map[string]bool{"words": true, "continuations": true, "cat_many": true, "grep_many_trees": true, "cat_distinct": true, "grep_distinct": true}

// TestHostileInputsBounded feeds each hostile shape at the size of the
// largest tool input the server accepts by default: each check must end
// (no stack overflow), allocate a bounded amount, and not allow what it
// could not prove.
func TestHostileInputsBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		name := fmt.Sprintf("%03d%s", i, strings.Repeat("a", 200))
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, err := New(Config{Policies: map[string]PolicySpec{DefaultPolicy: {Permissions: RuleSet{
		Deny: []string{"Bash(rm -rf /)", "Bash(curl * | sh)", "Read(//**/.ssh/id_*)", "Bash(sudo rm *)"},
		Ask:  []string{"Bash(git push *)"},
	}}}, Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	// At the limit, and at 16 KiB: under the bound on words, where the
	// parser and the analysis see the shapes whole.
	for size, calls := range map[string]map[string]ToolCall{"256KiB": hostileCalls(dir, inputLimit), "16KiB": hostileCalls(dir, 16<<10)} {
		for name, call := range calls {
			t.Run(size+"/"+name, func(t *testing.T) {
				req := &Request{Tool: call, WorkingDirectory: dir}
				var res Result
				var err error
				n := allocated(func() { res, err = e.Check(t.Context(), req) })
				if err != nil {
					t.Fatal(err)
				}
				if res.Decision == Allow && !readOnly[name] {
					t.Errorf("allowed (%s: %s)", res.Source, res.Reason)
				}
				// A check at the limit copies its input a few times; the
				// shapes above once took from 1 GB of stack to tens of GB.
				if n > 64<<20 {
					t.Errorf("allocated %d MB (%s)", n>>20, res.Reason)
				}
				t.Logf("%s/%s: %d MB, %s: %.160s", size, name, n>>20, res.Source, res.Reason)
			})
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// TestCheckStopsWhenCancelled: a check whose caller left stops at the
// next look at its context (between shell statements, between the
// directories of a walk or a glob) and returns the context's error
// rather than a decision made from facts cut short.
func TestCheckStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		sub := filepath.Join(dir, fmt.Sprintf("d%d", i))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "f.go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, call := range map[string]ToolCall{
		"shell statements": {Name: "Bash", Input: map[string]any{"command": fill("ls", "; ls", "", 4096)}},
		"shell tree":       {Name: "Bash", Input: map[string]any{"command": "grep -r x ."}},
		"Grep tree":        {Name: "Grep", Input: map[string]any{"pattern": "x", "path": dir}},
		"Read glob":        {Name: "Read", Input: map[string]any{"file_path": dir + "/*/f.go"}},
	} {
		res, err := e.Check(ctx, &Request{Tool: call, WorkingDirectory: dir})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %+v, %v; want context.Canceled", name, res, err)
		}
	}
}
