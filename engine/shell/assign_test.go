package shell

import "testing"

// TestAssignments: a plain assignment to a name only the script gives a
// meaning, from a value proven like an argument, is read-only, and later
// statements may expand the name; nothing else that assigns is.
func TestAssignments(t *testing.T) {
	ok := []string{
		`for png in *.png; do base="${png%.png}"; echo "$base"; done`,
		"for puml in docs/puml/*.puml; do base=$(basename \"$puml\" .puml); png=\"docs/images/${base}.png\"; test -f \"$png\" || echo \"Missing: $base.png\"; done | head -10",
		"for puml in puml/*.puml; do\n  base=$(basename \"$puml\" .puml)\n  if [ \"$base\" != \"_standard-style\" ]; then\n    png=\"images/${base}.png\"\n    if [ ! -f \"$png\" ]; then\n      echo \"Missing $png\"\n    fi\n  fi\ndone",
		"x=1; echo $x", "x=1 && echo $x", "x=1 || echo $x", "x=; echo \"[$x]\"", "x=a y=$x; echo $y", "name=$(git rev-parse --abbrev-ref HEAD); echo $name",
		"dir=$PWD; echo $dir", "n=$((1+2)); echo $n", "x+=a; echo $x", "my_var2=x; echo ${my_var2:-none}", "x=1; (echo $x)", "x=1; echo $(echo $x)",
		"x=1; if true; then echo $x; fi", "x=1; for i in a; do echo $x$i; done", "x=1; echo $x | cat", "x=~; echo $x",
		"f=README.md; echo $f",
		// The right side of && runs after the left side succeeded; an if's
		// branches run after its condition.
		"true && x=1 && echo $x", "echo a && n=$(ls | wc -l | tr -d ' ') && m=$(ls) && echo \"$n $m\"", "x=1 && y=2 && echo $x$y",
		"if x=$(pwd); then echo $x; else echo $x; fi", "if false; then :; elif x=1; then echo $x; else echo $x; fi",
		"x=1 || y=$x; echo $x", "while read -r l; do n=$l; echo $n; done < README.md", "x='a b'; echo \"$x\"",
	}
	bad := []string{
		// Names the shell, zsh or programs read.
		"PATH=/tmp; ls", "HOME=/tmp", "Base=x", "IFS=:", "histchars=x", "auto_resume=1", "_=x", "__=x", "path=/tmp/x", "fpath=x",
		"http_proxy=http://evil:8080; go list -m all", "https_proxy=x", "no_proxy=x", "all_proxy=x",
		// Values that expand what may be secret or run something.
		"x=$GITHUB_TOKEN; echo $x", "x=${DB_PASS}", "x=\"$AWS_SECRET_ACCESS_KEY\"", "x=$(printenv GITHUB_TOKEN)", "x=$(rm -rf .)",
		"x=$(cat ~/.ssh/id_rsa)", "x=`curl evil`", "x=${!y}", "x=$((y+1))", "x=$x; echo $x", "x=${y:=z}",
		// Arrays, subscripts, declarations, exports.
		"x=(a b); echo $x", "x[0]=1", "x[$(id)]=1", "export x=1", "declare x=1", "declare -x x=1", "local x=1", "readonly x=1",
		"typeset x=1", "x=1; export x",
		// An assignment seen only where it surely ran.
		"echo $x; x=1", "true && x=1; echo $x", "false || x=1; echo $x", "x=1 | cat; echo $x", "(x=1); echo $x", "{ x=1; }; echo $x",
		"if true; then x=1; fi; echo $x", "for i in a; do x=1; done; echo $x", "x=1 & echo $x", "echo $(x=1); echo $x",
		"while false; do x=1; done; echo $x", "for i in a b; do echo $x; x=$i; done",
		"true || x=1 && echo $x", "(true && x=1) && echo $x", "if x=1; then :; fi; echo $x", "if true; then x=1; fi && echo $x",
		"x=1 < /dev/null; echo $x", "x=1 >/dev/null && echo $x", "true && x=1 | cat && echo $x", "true && x=1 & echo $x",
		"while x=1; false; do :; done; echo $x", "if false; then x=1; elif echo $x; then :; fi",
		// Prefixes stay environment for the command.
		"x=1 ls", "x=1 git status", "GIT_DIR=x git log",
		// Other shells.
		"sh -c 'x=1; echo $x'", "zsh -c 'x=1'", "dash -c 'x=1'",
		// Nothing runs.
		"x=1; y=2", "x=1", "x=$HOME",
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
	// bash runs only what the analysis saw, and no builtin that changes
	// state.
	t.Run("bash", func(t *testing.T) {
		d := newBashDiff(t)
		for _, line := range ok {
			d.check(t, line)
		}
	})
}
