package shell

import (
	"slices"
	"strings"
	"testing"
)

func TestFindExpressions(t *testing.T) {
	ok := []string{
		"find . -name '*.go' -type f", "find . -printf '%p %s\\n'", "find src -newer x -o -empty", "find -L . -maxdepth 2 -print0",
		"find . -type f -newermt '2024-01-01'", "find . -path ./node_modules -prune -o -name '*.js' -print", "find . ! -name '*.go'",
		"find . -regextype posix-extended -regex '.*\\.(go|md)'", "find . -size +1M -ls", "find . -mmin -10", "find . -perm -u+x",
		"find . -name x -quit", "find /tmp -maxdepth 1 -user me", "find . \\( -name a -o -name b \\) -print", "find . -name '-exec'",
		"find -P -O3 . -mindepth 1 -not -empty", "find . -iname '*.MD' -xtype l", "find src tests -name '*_test.go'",
		"find . -name x -printf '%f %l %m\\n'", "find . -samefile a -links +1", "find", "find . -depth -daystart -mtime 0",
		// -exec and -execdir running a reader, a lister or a namer.
		"find . -name x -exec ls -la {} \\;", "find src -name '*.md' -exec cat {} \\;", "find src -exec grep -l pat {} +",
		"find . -exec wc -l {} +", "find . -name '*.go' -exec head -n 5 {} \\;", "find . -type f -exec sed -n 1p {} \\;",
		"find . -exec awk '{print FILENAME}' {} \\;", "find . -exec jq .name {} \\;", "find . -exec basename {} .puml \\;",
		"find . -name x -exec echo \"=== {} ===\" \\; -exec cat {} \\;", "find . -execdir grep -l x {} +", "find . -exec test -f {} \\; -print",
		"find . -exec grep -H x -- {} +", "find . -exec echo + \\;", "find . -exec ls -l {} ';'", "find . -exec /usr/bin/cat {} \\;",
		"find . -mtime -1 -name '*.log' -exec ls -lh {} \\; | sort -k9", "find . -exec printf '%s\\n' {} +",
	}
	bad := []string{
		"find . -exec id \\;", "find . -execdir id \\;", "find . -ok id \\;", "find . -okdir id \\;", "find . -delete",
		"find . -fprint /tmp/x", "find . -fprint0 /tmp/x", "find . -fprintf /tmp/x '%p'", "find . -fls /tmp/x",
		"find -files0-from list -name x", "find . -name x -o -exec id \\;", "find . \\( -exec id \\; \\)", "find . -newer -*",
		"find . -name -*", "find *", "find . -nam x", "find . -name", "find . -exec", "find . -newerXY x", "find . -print -quit -unknown",
		"find ~/.ssh -name id_rsa", "find . -name $X", "find $(pwd) -name x", "ls | xargs find", "find . -name x > out",
		"find - -name x", "find . -- -name x",
		// -exec of what is not a plain reader, or of a found file where
		// the program does not read a file.
		"find . -exec sh -c 'cat {}' \\;", "find . -exec bash -c 'cat \"$1\"' _ {} \\;", "find . -exec env cat {} \\;",
		"find . -exec xargs cat \\;", "find . -exec timeout 5 cat {} \\;", "find . -exec nice cat {} \\;", "find . -exec command cat {} \\;",
		"find . -exec {} \\;", "find . -exec ./{} \\;", "find . -exec ./run {} \\;", "find . -exec python3 {} \\;", "find . -exec node {} \\;",
		"find . -exec git log {} \\;", "find . -exec tee {} \\;", "find . -exec cp {} /tmp \\;", "find . -exec rm {} +", "find . -exec du {} \\;",
		"find . -exec tree {} \\;", "find . -exec find {} -delete \\;", "find . -exec ls -R {} \\;", "find . -exec ls -laR {} +",
		"find . -exec cat {}/../.env \\;", "find . -exec cat {} {} +", "find . -exec echo {} x{} +", "find . -exec cat *.go \\;",
		"find . -exec cat $F {} \\;", "find . -exec cat {} \\", "find . -exec cat {}", "find . -exec \\;", "find . -exec ;",
		"find . -exec sed {} f \\;", "find . -exec sed -e {} f \\;", "find . -exec awk {} \\;", "find . -exec jq {} \\;",
		"find . -exec head -n {} f \\;", "find . -exec grep -f {} f \\;", "find . -exec sort -o out {} \\;", "find . -exec cd {} \\;",
		"find . -exec read x \\;", "find . -execdir cat README {} \\;", "find . -execdir grep -r x src {} +", "find . -ok cat {} \\;",
		"find . -okdir cat {} \\;", "find ~ -exec cat {} \\;", "find / -name x -exec cat {} \\;", "find . -exec cat {} + -delete",
		"find . -exec cat {} \\; > out",
	}
	for _, line := range ok {
		if a := Analyze(line); !a.ReadOnly {
			t.Errorf("Analyze(%q): not read-only (%s), want read-only", line, a.Reason)
		}
	}
	for _, line := range bad {
		if a := Analyze(line); a.ReadOnly {
			t.Errorf("Analyze(%q): read-only, want not", line)
		}
	}
}

// TestFindStartPoints checks that the start points are what checkFind
// takes for the directories find lists.
func TestFindStartPoints(t *testing.T) {
	for line, want := range map[string][]string{
		"find src tests -name x":    {"src", "tests"},
		"find -L a -maxdepth 1":     {"a"},
		"find -D stat -O2 b c":      {"b", "c"},
		"find -name x":              nil,
		"find . ( -name a ) -print": {"."},
	} {
		a := analyzer{out: &Analysis{}}
		ws := strings.Fields(line)[1:]
		args := make([]wordInfo, len(ws))
		for i, w := range ws {
			args[i] = synthetic(w)
		}
		iv := invocation{a: &a, sp: programs["find"], name: "find", args: args, sc: &scope{}, ic: &invCtx{}}
		if why := checkFind(&iv); why != "" {
			t.Errorf("%s: %s", line, why)
			continue
		}
		var got []string
		for _, f := range iv.files {
			got = append(got, f.val)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: start points %q, want %q", line, got, want)
		}
	}
}
