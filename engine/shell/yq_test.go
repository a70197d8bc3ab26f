package shell

import "testing"

func TestYqExpressions(t *testing.T) {
	ok := []string{
		"yq '.a' f.yaml", "yq e '.a.b[0]' f.yaml", "yq eval-all '. as $item ireduce ({}; . * $item)' a.yaml b.yaml",
		"yq -o json '.spec.containers[].image' k.yaml", `yq '.a | select(.b == "x") | .c' f.yaml`, "yq 'keys | length' f.yaml",
		`yq '.a."b-c" // "none"' f.yaml`, "yq -n '1 + 2'", "yq '.a | with_entries(select(.value != null))' f.yaml",
		"yq '.a | @base64d' f.yaml", "yq '.. | select(tag == \"!!str\")' f.yaml", "yq '.a |= . + 1' f.yaml",
		"yq '.[] | [.name, .version] | @tsv' f.yaml", "yq", "yq -P . f.yaml", "yq '.items | map(.x) | unique | sort' f",
	}
	bad := []string{
		// The environment, in several spellings.
		"yq 'env(HOME)' f.yaml", "yq 'strenv(AWS_SECRET_ACCESS_KEY)' f.yaml", "yq '.a = strenv( TOKEN )' f.yaml",
		"yq '$ENV.HOME' f.yaml", "yq '.a | envsubst' f.yaml", "yq '.a | envsubst(ne)' f.yaml", "yq e 'env ( \"X\" )' f",
		"yq '.x = env(GITHUB_TOKEN) | .x' f", `yq '"\(env(HOME))"' f`, "yq '$__unbound' f",
		// Files and expressions from data.
		`yq 'load("/etc/passwd")' f`, `yq 'load_str("../.env")' f`, `yq '.a = load_xml("x")' f`, "yq 'eval(.expr)' f",
		`yq -n 'eval("lo"+"ad(\"x\")")'`, `yq '.a | load_props("p")' f`, `yq '.a | load_base64("k")' f`,
		// Unknown operators, characters and run-time expressions.
		"yq '.a | system(\"id\")' f", "yq '.a # c' f", "yq \"$EXPR\" f", "yq '.a | frobnicate' f", "yq '.a & .b' f",
		"yq '@cmd' f", "find . -name '*.yaml' -print0 | xargs -0 yq",
		// A first operand that is no expression is evaluated when no file
		// of its name exists: yq envsubst reads the environment.
		"yq -P f.yaml", "yq envsubst", "yq env.yaml",
	}
	for _, l := range ok {
		if a := Analyze(l); !a.ReadOnly {
			t.Errorf("Analyze(%q): not read-only (%s)", l, a.Reason)
		}
	}
	for _, l := range bad {
		if a := Analyze(l); a.ReadOnly {
			t.Errorf("Analyze(%q): read-only, want not", l)
		}
	}
	// yq reads its first operand as a file when one of that name exists.
	for l, want := range map[string]string{"yq .env": ".env", "yq '.a' f.yaml": "f.yaml"} {
		a := Analyze(l)
		found := false
		for _, r := range a.Reads {
			found = found || r == want
		}
		if !found {
			t.Errorf("Analyze(%q).Reads = %q, want %q among them", l, a.Reads, want)
		}
	}
}
