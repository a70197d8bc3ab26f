package shell

import (
	"strings"
	"testing"
)

func TestDisagreementRefused(t *testing.T) {
	for _, tc := range []struct{ line, why string }{
		// Backslash-newline anywhere but between words.
		{"ls # note \\\ntouch pwned", "backslash-newline inside a word, comment"},
		{"ls #\\\ncat /etc/hostname", "backslash-newline inside a word, comment"},
		{"ls\\\n-la", "backslash-newline inside a word, comment"},
		{"ls \\ \\\n-la", "backslash-newline inside a word, comment"},
		{"echo \"a \\\nb\"", "backslash-newline inside a word, comment"},
		{"echo 'a \\\nb'", "backslash-newline inside a word, comment"},
		{"echo $(ls \\\n-la)", "backslash-newline inside a word, comment"},
		{"cat <<E\\\nOF\nE\ntouch pwned\nEOF\n", "backslash-newline inside a word, comment"},
		{"cat <<EOF\nhi\\\nEOF\ntouch pwned\nEOF\n", "backslash-newline inside a word, comment"},
		{"cat <<'EOF'\nhi \\\nEOF\ntouch pwned\nEOF\n", "backslash-newline inside a word, comment"},
		{"bash -c 'cat <<EOF\nhi \\\\\nEOF\n'", "backslash-newline inside a word, comment"},
		// Delimiters other than a plain word, bare or wholly quoted.
		{"cat <<\"E\"F\nhi\nEF\n", "delimiter is not a plain word"},
		{"cat <<E'O'F\nhi\nEOF\n", "delimiter is not a plain word"},
		{"cat <<\\EOF\nhi\nEOF\n", "delimiter is not a plain word"},
		{"cat <<$'EOF'\nhi\nEOF\n", "delimiter is not a plain word"},
		{"cat <<\"EOF \"\nhi\nEOF \n", "delimiter is not a plain word"},
		{"cat <<''\nhi\n\n", "delimiter is not a plain word"},
		{"cat <<E/F\nhi\nE/F\n", "delimiter is not a plain word"},
		{"cat <<'EOF'#x\nhi\nEOF#x\ntouch pwned\nEOF\n", "the parser ends a word where bash does not"},
		// Bodies the parser and bash end in different places.
		{"cat <<EOF\n$(echo '\nEOF\ntouch pwned\n')\nEOF\n", "the parser's body ends elsewhere"},
		{"cat <<EOF\n`echo \"\nEOF\ntouch pwned\n\"`\nEOF\n", "the parser's body ends elsewhere"},
		{"bash -c 'cat <<EOF\n$(echo \"\nEOF\ntouch pwned\n\")\nEOF\n'", "the parser's body ends elsewhere"},
		{"cat <<A; echo '\nA\ntouch pwned\n'\nA\n", "reads part of here-document A's body as commands"},
		{"cat <<EOF \"\nEOF\ntouch pwned\n\"\nEOF\n", "reads part of here-document EOF's body as commands"},
		{"cat <<A $(cat <<B\nb\nB\n)\na\nA\n", "here-document"},
		{"cat <<A\n$(cat <<B\nb\nB\n)\nA\n", "here-document inside a here-document"},
		{"echo `cat <<EOF\nhi\nEOF`", "here-document inside `..`"},
		// Backquotes with escapes, arithmetic against subshells.
		{"echo `echo \\`ls\\``", "backslash inside `..`"},
		{"echo `ls \\$HOME`", "backslash inside `..`"},
		{"echo $( (ls) )x$((ls) )", "does not parse"},
		{"cat <((ls))", "<((: bash reads it"},
		{"((ls) )", "does not parse"},
		{"echo $((ls); (ls))", "does not parse"},
		{"echo $(( \")\" ))", "arithmetic expansion with quotes"},
		{"echo $[ $HOME ]", "arithmetic expansion with quotes"},
		// Bytes read differently, or invisibly.
		{"ls\u00a0-la", "non-ASCII blank"},
		{"ls \u2003-la", "non-ASCII blank"},
		{"ls\u200b -la", "non-ASCII blank"},
		{"echo \u202etouch", "non-ASCII blank"},
		{"echo \ufeffhi", "non-ASCII blank"},
		{"echo \u0085 hi", "non-ASCII blank"},
		{"ls \v -la", "control character"},
		{"ls \f -la", "control character"},
		{"echo \x1b[2J", "control character"},
		{"echo \x7f", "control character"},
		{"echo \xff hi", "invalid UTF-8"},
		{"echo \xc3( hi", "invalid UTF-8"},
		{"bash -c 'ls\t\v-la'", "control character"},
	} {
		a := Analyze(tc.line)
		if a.ReadOnly {
			t.Errorf("%q: read-only, want refused (%s)", tc.line, tc.why)
			continue
		}
		if tc.why != "" && !strings.Contains(a.Reason, tc.why) {
			t.Errorf("%q: reason %q, want %q", tc.line, a.Reason, tc.why)
		}
	}
}

func TestDisagreementAgreed(t *testing.T) {
	for _, line := range []string{
		// Here-documents with plain delimiters.
		"cat <<EOF\nhi\nEOF",
		"cat <<EOF\nhi\nEOF\n",
		"cat <<EOF\nhi\nEOF\nls",
		"cat << EOF\nhi there\n\nEOF\n",
		"cat <<'EOF'\n$(not run) `nor this` \\ $HOME\nEOF\nls -la\n",
		"cat <<\"EOF\"\nhi\nEOF\n",
		"cat << 'REPORT'\n=== Done ===\n\nScripts:\nREPORT\nls -1 scripts/*.sh 2>/dev/null\n",
		"cat << 'EOF'\n╔══════╗\n║ ✓ ok ║\n╚══════╝\nEOF",
		"cat <<-EOF\n\thi\n\tEOF\nls",
		"cat <<-'EOF'\n\t\thi\n\tEOF\nls",
		"cat <<-EOF\n\tEOF\n",
		"cat <<EOF\nEOF\n",
		"cat <<END_OF.TEXT-1\nhi\nEND_OF.TEXT-1\n",
		"cat <<EOF\n$HOME\nEOF",
		"cat <<EOF\n$(pwd) and `pwd`\nEOF",
		"cat <<EOF | grep hi\nhi\nEOF\n",
		"cat <<EOF >/dev/null\nhi\nEOF\n",
		"cat <<A <<B\na\nA\nb\nB\n",
		"cat <<A; cat <<B\na\nA\nb\nB\nls",
		"cat <<A | cat <<B\na\nA\nb\nB\n",
		"{ cat <<A; }\na\nA\n",
		"if cat <<EOF; then\nhi\nEOF\nls; fi",
		"echo \"$(cat <<EOF\nhi)\nEOF\n)\"",
		"cat <(cat <<'EOF'\nhi\nEOF\n)",
		"grep foo <<< 'foo bar'",
		// Comments, continuations between words, multi-line scripts.
		"ls # rm -rf / \\",
		"ls # it's fine\npwd",
		"ls -la # list\n# a whole comment line\ngit status",
		"echo a#b",
		"ls \\\n  -la",
		"ls && \\\n  pwd",
		"ls \\\n# note\npwd",
		"cat <<EOF \\\n| cat\nhi\nEOF\n",
		"git status\ngit diff --stat\n\ngit log --oneline -5\n",
		"for f in *.go; do\n  echo \"$f\"\ndone",
		// Substitutions and arithmetic in their plain shapes.
		"echo `ls`",
		"echo $(ls) $( ls )",
		"echo $((1 + 2)) $[3*4]",
		"echo $(case a in a) ls;; esac)",
		"( (ls) )",
		// Non-ASCII that is not a blank.
		"echo \"✅ done — naïve café\"",
		"grep -E '[│├└─]' f",
		"echo '\ufffd'",
	} {
		if a := Analyze(line); !a.ReadOnly {
			t.Errorf("%q: not read-only: %s", line, a.Reason)
		}
	}
}

// TestDisagreementDirect checks the guard alone on lines whose other parts
// the analysis refuses anyway.
func TestDisagreementDirect(t *testing.T) {
	for _, tc := range []struct {
		line string
		bad  bool
	}{
		{"ls\rrm x", true},
		{"ls\x00", true},
		{"cat <<EOF\nhi\nEOF\n", false},
		{"cat <<EOF\nhi\nEOF \ntouch x\nEOF\n", false}, // one body: bash and the parser agree
		{"cat <<-EOF\nhi\n  EOF\ntouch x\n\tEOF\n", false},
		{"cat <<EOF\nhi\n", true},
	} {
		f, release, err := parse(tc.line)
		if err != nil {
			release()
			if !tc.bad {
				t.Errorf("%q: %v", tc.line, err)
			}
			continue
		}
		why := disagreement(tc.line, f)
		release()
		if (why != "") != tc.bad {
			t.Errorf("%q: disagreement %q, want bad=%v", tc.line, why, tc.bad)
		}
	}
}
