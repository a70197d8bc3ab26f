package shell

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The program table's test wants a row per program; the awk rows live
// here with the awk tests.
func init() {
	for _, n := range []string{"gawk", "mawk", "nawk"} {
		programCases[n] = struct{ ok, bad []string }{
			[]string{n + " '{print $1}' f"}, []string{n + " 'BEGIN{system(\"id\")}'", n + " -f prog.awk f"}}
	}
	programCases["awk"] = struct{ ok, bad []string }{
		[]string{"awk '{print $1}' f", "ps aux | awk '{print $2}'"}, []string{"awk '{print > \"f\"}' x", "awk -f p.awk f"}}
}

func TestAwkPrograms(t *testing.T) {
	ok := []string{
		"awk '{print $1}' f", "ps aux | grep node | awk '{print $2, $11}'", "awk -F: '{print $1}' /etc/passwd",
		"awk 'NR==228' s.js", "awk '/^constraints:/,/^settings:/' c.yaml", "awk 'NR>1 && NR<=10 {print $9, \"(\" $6 \")\"}' f",
		"awk '{sum+=$1} END {print \"Total: \" sum}' f", "awk '{for(i=11;i<=NF;i++) printf \"%s \", $i; print \"\"}' f",
		"awk '{if ($5 ~ /[0-9]+K/ && $5+0 < 50) print $9, $5}' f", "awk -v n=3 'NR%n==0' f", "awk '{print $NF}' a b",
		"awk 'BEGIN{FS=\",\"} {print $2}' f", "awk '{ a[$1]++ } END { for (k in a) print k, a[k] }' f",
		"awk '{ x = $1 / 2; y = x / 4; print x, y }' f", "awk '{ print ($1 > $2) }' f", "awk '{ print length($0) }' f",
		"awk 'function f(a) { return a*2 } { print f($1) }' f", "awk '{ gsub(/[\\/]x/, \"y\"); print }' f",
		"awk '{ print substr($0, index($0, \">\")) }' f", "awk 'BEGIN { printf(\"%d\\n\", 3) }'", "awk '$1 ~ \"a|b\"' f",
		"awk '{ n = split($0, p, \"/\"); print p[n] }' f", "awk 'END{print NR}' f", "gawk '{print toupper($1)}' f",
		"awk '{print $1}' OFS=, f", "awk '{ print }\n# > comment\n' f", "awk --version", "awk '!seen[$0]++' f",
		"awk -F'|' '\nBEGIN {\n  print \"x\"\n}\n{\n  ts = $1\n  printf \"%s\\n\", ts\n}' f",
		"awk 'BEGIN { while (i < 3) { i++; print i } }'", "awk '{print $1}' -", "awk {print} f", "awk $'{print}' f",
	}
	bad := []string{
		// Commands, pipes and I/O.
		"awk 'BEGIN{system(\"id\")}'", "awk '{print > \"f\"}' x", "awk '{print >> \"f\"}' x", "awk '{print | \"sh\"}' x",
		"awk 'BEGIN{while((\"id\"|getline l)>0)print l}'", "awk '{\"date\"|getline}' x", "awk '{getline < \"/etc/shadow\"}' x",
		"awk '{getline line; print line}' x", "awk '{print $1 > $2}' f", "awk '{printf(\"%s\", $1) > \"f\"}' x",
		"awk '{print(\"x\") > \"f\"}' x", "awk '{print \"a\",\n\"b\" > \"f\"}' x", "awk '{close(\"x\")}' f", "awk '{fflush()}' f",
		"awk 'BEGIN{print |& \"cat\"}'", "awk '{print 1 >= 0}' f", "awk '{ print $1 > 5 ? \"a\" : \"b\" }' f", "awk '{print a[1 > 2]}' f",
		// The environment and the files awk opens.
		"awk 'BEGIN{print ENVIRON[\"HOME\"]}'", "awk 'BEGIN{for (k in ENVIRON) print k}'", "awk 'BEGIN{print PROCINFO[\"pid\"]}'",
		"awk 'BEGIN{ARGV[1]=\"/etc/shadow\"; ARGC=2} {print}' f", "awk -v ARGC=0 '{print}'", "awk '{print}' ARGC=0 f",
		"awk 'BEGIN{print SYMTAB[\"x\"]}'", "awk -v 'x=1' -f prog.awk", "awk -e 'BEGIN{}'", "gawk -i lib '{}'", "gawk -l ext '{}'",
		"gawk -E prog.awk", "gawk -o out.awk '{}'", "gawk -p prof '{}'", "gawk -d '{}'", "gawk -D '{}'", "mawk -W exec p",
		"awk '{print}' ~/.ssh/id_rsa",
		// gawk directives and indirect calls.
		"gawk '@include \"x\"'", "gawk '@load \"filefuncs\"'", "gawk 'BEGIN{f=\"system\"; @f(\"id\")}'",
		"gawk 'BEGIN { print _\"hello\" }'", "gawk 'BEGIN { a::b = 1 }'",
		// Where awks split the program differently.
		"awk '{ if (1) /x/ }' f", "awk 'BEGIN { print length /2 }'", "awk '$1 ~ /[/]/' f", "awk '{ print 0x11 }' f",
		"awk '{ x = i++ /2/ 1 }' f", "awk '{ print \"a\\\n\" }' f", "awk '{ print $/x/ }' f",
		// Unknown functions and malformed programs.
		"awk '{ foo(1) }' f", "awk '{ print \"x }' f", "awk 'BEGIN { x = 1 & 2 }'",
		"awk 'BEGIN { switch (x) { case 1: print } }'", "awk \"{print $x}\" f", "awk '{ gsub(/[/]x/, \"y\") }' f",
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

// TestAwkReads checks that operands are recorded as reads and
// assignments are not.
func TestAwkReads(t *testing.T) {
	a := Analyze("awk -v x=1 '{print}' a OFS=, b/c path=/etc/hosts")
	if !a.ReadOnly {
		t.Fatalf("not read-only: %s", a.Reason)
	}
	if got := strings.Join(a.Reads, " "); got != "a b/c" {
		t.Errorf("reads %q, want %q", got, "a b/c")
	}
}

// TestAwkAgainstAwks runs every generated program the checker accepts
// under each awk found (gawk, mawk, original-awk, busybox awk) in an
// empty directory: each program carries a payload that creates a file
// (system, redirection, a pipe) hidden where a lexer that splits the
// text differently from awk's would not see it, so a file appearing
// means the checker and an awk disagree. TOOLGATE_AWK_PROGRAMS sets how
// many programs are generated.
func TestAwkAgainstAwks(t *testing.T) {
	var awks [][]string
	for _, a := range [][]string{{"gawk"}, {"mawk"}, {"original-awk"}, {"busybox", "awk"}} {
		if p, err := exec.LookPath(a[0]); err == nil {
			awks = append(awks, append([]string{p}, a[1:]...))
		}
	}
	if len(awks) == 0 {
		t.Skip("no awk found")
	}
	n := 300
	if v, err := strconv.Atoi(os.Getenv("TOOLGATE_AWK_PROGRAMS")); err == nil {
		n = v
	}
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	accepted := 0
	for range n {
		prog := awkRandomProgram(r)
		if awkProgram(prog) != "" {
			continue
		}
		accepted++
		for _, a := range awks {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			cmd := exec.CommandContext(ctx, a[0], append(a[1:], prog)...)
			cmd.Dir = dir
			cmd.Stdin = strings.NewReader("a b c\n1 2 3\n")
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			_ = cmd.Run()
			cancel()
			if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
				t.Errorf("%s ran the payload of accepted program %q", a[0], prog)
				os.Remove(filepath.Join(dir, "PWNED"))
			}
		}
	}
	t.Logf("%d programs, %d accepted and run under %d awks", n, accepted, len(awks))
}

// awkRandomProgram hides a payload (a statement that creates PWNED)
// where a lexer that reads "/" or a quote differently from awk would
// take it for part of a regex, a string or a comment.
func awkRandomProgram(r *rand.Rand) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	payload := pick(`system("touch PWNED")`, `print "x" > "PWNED"`, `printf "x" >> "PWNED"`, `print "x" | "cat > PWNED"`,
		`"touch PWNED" | getline`, `print 1 > "PWNED"`, `print "a", "b" > "PWNED"`, `print("a") > "PWNED"`)
	// Operands, after which awk divides.
	operand := pick("x", "1", `"6"`, "(x)", "a[1]", "x++", "x--", "NF", "$1", "length", "length(x)", "sqrt(4)", "f(1)",
		"x ", "$NF", "1.5", "1e2", "a[\"k\"]", "(1)(2)", "-x", "!x")
	// Places where awk starts a regex.
	regex := func(body string) string {
		return pick(
			"{ if ($0 ~ /"+body+"/) n++; "+payload+"; s = \"a\" }",
			"{ print /"+body+"/; "+payload+"; s = \"a\" }",
			"{ x = !/"+body+"/; "+payload+"; s = \"a\" }",
			"{ x = 1 && /"+body+"/; "+payload+"; s = \"a\" }",
			"{ x = (/"+body+"/); "+payload+"; s = \"a\" }",
			"{ x = 1 ? /"+body+"/ : 2; "+payload+"; s = \"a\" }",
			"{ x = 1 || /"+body+"/; "+payload+"; s = \"a\" }",
			"{ x = 1 == /"+body+"/; "+payload+"; s = \"a\" }",
			"{ x = 2 - /"+body+"/; "+payload+"; s = \"a\" }",
			"{ x = f(1, /"+body+"/); "+payload+"; s = \"a\" }",
			"{ if (1) n++; else /"+body+"/; "+payload+"; s = \"a\" }",
			"{ x = 1 }\n/"+body+"/ { n++; "+payload+"; s = \"a\" }",
			"/"+body+"/ { n++ }; { "+payload+"; s = \"a\" }",
			"{ x = 1 } /"+body+"/ { "+payload+"; s = \"a\" }",
			"{ if (1)\n /"+body+"/; "+payload+"; s = \"a\" }",
		)
	}
	if r.IntN(5) == 0 {
		// The payload quoted: inert, and accepted.
		payload = strconv.Quote(payload)
	}
	var prog string
	switch r.IntN(3) {
	case 0:
		prog = pick(
			"{ x = 6; a[1] = 2; y = "+operand+" / 2; "+payload+"; z = 8 / 2 }",
			"{ x = 6; y = "+operand+" /2/ 1; "+payload+"; z = 1 }",
			"{ x = 6; y = "+operand+" / 2\n"+payload+"\nz = 8 / 2 }",
			"{ x = 6; y = "+operand+" /= 2; "+payload+"; z = 8 / 2 }",
			"{ x = 6; print "+operand+" / 2, "+payload+", 3 / 1 }",
		)
	case 1:
		prog = regex(pick(`"`, `#`, `\"`, `a"b`, `x#`, `\/"`, `[/"]`, `["]`, `[#]`))
	default:
		prog = regex(pick("a", "[a/]", "[]/]", "[^]/]", "[[:alpha:]/]", "\\/", "[\\/]", "[[:]/]", "[/", "a]/"))
	}
	return "function f(a, b) { return 1 }\n" + prog
}
