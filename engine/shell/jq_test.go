package shell

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestJqFilters(t *testing.T) {
	ok := []string{
		"jq .name package.json", "jq -r '.dependencies | keys[]' package.json", "jq '.[] | select(.environment == \"prod\")' f",
		"jq '{env: .x}' f", "jq '{env}' f", "jq '{a: 1, env}' f", "jq -r '.env' f", "jq '.[\"env\"]' f", "jq '.\"env\"' f",
		"jq 'def f(x): x * 2; f(.a)' f", "jq -n 'def f($a): $a + a; f(1)'", "jq -r '.[] | \"\\(.name) \\(.version)\"' f",
		"jq 'map(select(.a > 1)) | length' f", "jq -r '.items[] | @base64' f", "jq '.a // \"default\"' f",
		"jq 'reduce .[] as $x (0; . + $x)' f", "jq '[.[] | {name, id: .uid}]' f", "jq -n '$__loc__'", "jq -r --arg k v '.[$k]' f",
		"jq '. as {a: $x} | $x' f", "jq -r '@sh \"echo \\(.a)\"' f", "jq '.a | test(\"x\"; \"i\")' f", "jq 'input_filename' f",
		"jq '.[] # comment\n| .a' f", "jq 'if .a then 1 elif .b then 2 else 3 end' f", "jq -n 'try error(\"x\") catch .'",
		"jq 'label $out | foreach .[] as $i (0; .+$i; if . > 3 then ., break $out else . end)' f", "jq '.a?' f",
		"jq '..|numbers' f", "jq 'limit(3; .[])' f", "jq '.a |= . + 1' f", "jq -r 'to_entries | map(\"\\(.key)=\\(.value)\") | .[]' f",
		"jq -c 'paths' f", "jq '{(.k): .v}' f", "jq '.\"a-b\"' f", "jq 'splits(\", \")' f", "jq '.a | contains(\"import\")' f",
		"jq -n '\"env and $ENV in a string\"'", "jq -n '[1,2] | add'", "jq -n 'null, true, false'", "jq -n '{if: 1, end: 2} | .if'",
		"jq '.[] | {name: .name, \"env\": .env}' f", "jq -n '\"a\\\"b\"'", "jq -n '1.5e3 + .5'", "jq -r '.[0].name' f", "jq . f",
		"jq", "jq -n", "jq '.a as [$x, $y] | $x'", "jq -n 'input'", "jq -n '[inputs]' f", "jq '.a ?// .b' f",
	}
	bad := []string{
		"jq env.HOME f", "jq -n 'env'", "jq '$ENV.X' f", "jq -n '$ENV'", "jq -n '$ ENV'", "jq 'import \"a\" as a; .' f",
		"jq 'include \"a\"; .' f", "jq -n 'modulemeta'", "jq -n '\"\\(env.HOME)\"'", "jq -n '{a: env}'",
		"jq -n '{(env|tostring): 1}'", "jq -n 'def f: def env: 1; 1; env'", "jq -n 'def env: 1; env'", "jq -n 'a::b'",
		"jq -n '$a::b'", "jq -n 'get_search_list'", "jq -n '1 # x\\\nenv'", "jq -n 'foo'", "jq -n '`x`'", "jq -L ~ -n 1",
		"jq -f prog.jq f", "jq --rawfile a /etc/shadow -n '$a'", "jq --slurpfile a x -n 1", "jq .[0] f", "jq -n '[env][0]'",
		"jq -n 'env as $e | $e'", "jq -n '.a | env'", "jq -n '{a: 1, b: env}'", "jq -n '\"\\(\"\\(env)\")\"'",
		"jq -n 'import \"x\" as $x; $x'", "jq -n '\"x\" as $a | $a | env'", "jq -n '{\"a\": $ENV}'", "jq -n '{$ENV}'",
		"jq -n '1 \\\\ 2'", "jq -n 'é'", "jq . ~/.docker/config.json", "jq -n '\"unterminated'", "jq -n '(1'",
		// Variables: the filter's own, --arg names and jq's harmless ones only.
		"jq -n '$__prog_args'", "jq -n '$undefined'", "jq 'reduce .[] as $x (0; $SECRET)' f", "jq -n --arg a b '$b'",
		"jq '. as $x | $y' f", "jq -n '$__loc__ as $l | $HOME'",
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

// TestJqAgainstJq runs every generated filter the checker accepts under
// /usr/bin/jq with a canary in the environment: each filter hides a
// read of the environment where a lexer that splits strings, comments,
// fields or object keys differently from jq's would miss it, so the
// canary in the output means the checker and jq disagree.
// TOOLGATE_JQ_FILTERS sets how many filters are generated.
func TestJqAgainstJq(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("no jq found")
	}
	n := 300
	if v, err := strconv.Atoi(os.Getenv("TOOLGATE_JQ_FILTERS")); err == nil {
		n = v
	}
	const canary = "toolgate-canary-4417"
	r := rand.New(rand.NewPCG(5, 6))
	accepted := 0
	for range n {
		filter := jqRandomFilter(r)
		if jqFilter(filter) != "" {
			continue
		}
		accepted++
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		cmd := exec.CommandContext(ctx, jq, "-c", filter)
		cmd.Stdin = strings.NewReader(`{"env": "field", "a": 1, "ENV": "field"}`)
		cmd.Env = []string{"CANARY=" + canary, "PATH=/usr/bin:/bin"}
		out, _ := cmd.CombinedOutput()
		cancel()
		if bytes.Contains(out, []byte(canary)) {
			t.Errorf("jq printed the environment for accepted filter %q", filter)
		}
	}
	t.Logf("%d filters, %d accepted and run", n, accepted)
}

// jqRandomFilter wraps a read of the environment in the constructs a
// lexer must split exactly.
func jqRandomFilter(r *rand.Rand) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	read := pick("env", "$ENV", "env.CANARY", "$ENV.CANARY", "$ ENV", "[env][0]", "(env)", "env|tostring")
	around := pick(
		`"%s"`, `"a \(%s) b"`, `"\("\(%s)")"`, `"\\" | %s`, `"\"" | %s`, `"#" | %s`, "# %s\n.", "#\\\n%s", ".%s",
		`."%s"`, `.["%s"]`, "{%s}", "{a: 1, %s}", "{%s: 1}", "{a: %s}", "def %s: 1; %s", "def f: def %s: 1; 1; %s",
		"def f(%s): %s; f(1)", "def f($%s): 1; %s", "[.[]?, %s]", "%s as $x | 1", `@text "\(%s)"`, `@json "x\(%s)"`,
		"if false then %s else 1 end", "try %s catch 1", ". as {a: $x} | %s", "{(%s|tostring): 1}", `"\(1)" + "\(%s)"`,
		"%s", `"a" as $e | "\($e)" | %s`, `{"a": %s}`, "1 as $x | {$x, %s}", "reduce %s as $x (0; 1)",
	)
	return strings.ReplaceAll(around, "%s", read)
}
