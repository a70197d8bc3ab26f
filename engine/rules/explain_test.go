package rules

import (
	"strings"
	"testing"
)

func pathCall(tool, kind string, paths ...string) Call {
	return Call{Tool: tool, Kind: kind, Paths: paths}
}

// TestRuleExplain: each near miss is found, says precisely why, and rules
// that match or are nowhere near are reported as such.
func TestRuleExplain(t *testing.T) {
	for _, tc := range []struct {
		name, list, rule string
		call             Call
		env              Env
		matched, near    bool
		why              []string // substrings of Why
		subject          string
	}{
		{name: "prefix form vs a longer word", list: "allow", rule: "Bash(npm run test:*)", call: shellCall("npm run test:unit"), near: true,
			why: []string{`"npm run test:*" is the prefix form`, `the word "test" runs on into "test:unit"`, "Bash(npm run test*)"}, subject: "npm run test:unit"},
		{name: "prefix form matches its arguments", list: "allow", rule: "Bash(npm run test:*)", call: shellCall("npm run test -- --watch"), matched: true, subject: "npm run test -- --watch"},
		{name: "glob word boundary", list: "deny", rule: "Bash(cat *)", call: shellCall("catalog x"), near: true,
			why: []string{"the space before '*' makes \"cat\" a whole word", `"catalog"`}},
		{name: "exact rule, more arguments", list: "ask", rule: "Bash(npm test)", call: shellCall("npm test --watch"), near: true,
			why: []string{`matches exactly the command "npm test"`, `" --watch"`}},
		{name: "command stops short", list: "allow", rule: "Bash(git diff HEAD *)", call: shellCall("git diff"), near: true,
			why: []string{`stops after "git diff"`, `"HEAD"`}},
		{name: "glob suffix, one-word prefix: not near", list: "allow", rule: "Bash(git * main)", call: shellCall("git push origin dev")},
		{name: "assignment prefix", list: "allow", rule: "Bash(npm test)", call: shellCall("CI=1 npm test"), near: true,
			why: []string{"starts with CI=1", "spells them"}, subject: "CI=1 npm test"},
		{name: "allow is case-sensitive", list: "allow", rule: "Bash(npm test)", call: shellCall("NPM test"), near: true, why: []string{"ignoring case"}},
		{name: "deny folds case", list: "deny", rule: "Bash(npm test)", call: shellCall("NPM test"), matched: true},
		{name: "another program", list: "allow", rule: "Bash(npm run test:*)", call: shellCall("npm install")},
		{name: "dangerous allow in auto", list: "allow", rule: "Bash(python:*)", call: shellCall("python x.py"), near: true, why: []string{"not applied in auto mode"}},
		{name: "path below the directory, one level too deep", list: "allow", rule: "Edit(src/*.go)", call: pathCall("Edit", "edit", "/home/dev/proj/src/sub/x.go"), near: true,
			why: []string{"below /home/dev/proj/src", "*.go does not match sub/x.go", "'*' and '?' stay within one path segment"}},
		{name: "path rule matches", list: "allow", rule: "Edit(src/**)", call: pathCall("Edit", "edit", "/home/dev/proj/src/sub/x.go"), matched: true},
		{name: "slash is the working directory", list: "deny", rule: "Read(/etc/hosts)", call: pathCall("Read", "read", "/etc/hosts"), near: true,
			why: []string{"relative to the working directory (/home/dev/proj/etc/hosts)", "write //etc/hosts"}},
		{name: "anchored elsewhere", list: "allow", rule: "Read(./docs/**)", call: pathCall("Read", "read", "/srv/docs/a.md"), near: true,
			why: []string{"anchored at /home/dev/proj", "not below it"}},
		{name: "floating pattern, nowhere near", list: "deny", rule: "Read(*.env)", call: pathCall("Read", "read", "/home/dev/proj/main.go")},
		{name: "unknown home", list: "allow", rule: "Read(~/notes/**)", call: pathCall("Read", "read", "/home/dev/notes/a"), env: Env{Cwd: "/home/dev/proj"}, near: true,
			why: []string{"the home directory (~/)", "never matches"}},
		{name: "Write rule for an edit", list: "allow", rule: "Write(src/**)", call: pathCall("Edit", "edit", "/home/dev/proj/src/a.go"), near: true,
			why: []string{"Write rules do not cover Edit, whose kind is edit (Edit rules do)"}},
		{name: "Edit rule for a read: not near", list: "allow", rule: "Edit(src/**)", call: pathCall("Read", "read", "/home/dev/proj/src/a.go")},
		{name: "exact rule, a longer path: not near", list: "deny", rule: "Bash(rm -rf /)", call: shellCall("rm -rf /tmp/x")},
		{name: "one-word prefix, later text: not near", list: "deny", rule: "Bash(curl * | sh)", call: shellCall("curl -s x")},
		{name: "two-word prefix, later text", list: "allow", rule: "Bash(git log * --oneline)", call: shellCall("git log -5"), near: true,
			why: []string{`does not end with " --oneline"`}},
		{name: "glob word run-on", list: "allow", rule: "Bash(git diff *)", call: shellCall("git diff-tree -r x"), near: true,
			why: []string{`"diff" runs on into "diff-tree"`}},
		{name: "tool name case", list: "deny", rule: "bash(rm *)", call: shellCall("rm x"), near: true, why: []string{"case-sensitive"}},
		{name: "Read allow rule for a shell read", list: "allow", rule: "Read(//tmp/**)", call: Call{Tool: "Bash", Kind: "shell", Commands: []Command{{Text: "cat /tmp/x"}}, ShellReads: []string{"/tmp/x"}}, near: true,
			why: []string{"never allow a shell command"}, subject: "reads /tmp/x"},
		{name: "Read deny rule, a shell read elsewhere", list: "deny", rule: "Read(/etc/hosts)", call: Call{Tool: "Bash", Kind: "shell", Commands: []Command{{Text: "cat /etc/hosts"}}, ShellReads: []string{"/etc/hosts"}}, near: true,
			why: []string{"write //etc/hosts"}, subject: "reads /etc/hosts"},
		{name: "Read deny rule catches a shell read", list: "deny", rule: "Read(//tmp/**)", call: Call{Tool: "Bash", Kind: "shell", Commands: []Command{{Text: "cat /tmp/x"}}, ShellReads: []string{"/tmp/x"}}, matched: true,
			subject: "reads /tmp/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == (Env{}) {
				env = Env{Cwd: "/home/dev/proj", Home: "/home/dev"}
			}
			r, err := Parse(tc.rule)
			if err != nil {
				t.Fatal(err)
			}
			v := r.Explain(tc.list, tc.call, env, true)
			if v.Matched != tc.matched || v.NearMiss != tc.near {
				t.Fatalf("matched %v near %v (why %q), want %v %v", v.Matched, v.NearMiss, v.Why, tc.matched, tc.near)
			}
			for _, w := range tc.why {
				if !strings.Contains(v.Why, w) {
					t.Errorf("why %q lacks %q", v.Why, w)
				}
			}
			if tc.subject != "" && v.Subject != tc.subject {
				t.Errorf("subject %q, want %q", v.Subject, tc.subject)
			}
		})
	}
}

// TestExplainAgreesWithMatching: Explain's matches are the set's, rule by
// rule, and its uncovered parts are empty exactly when Allow allows.
func TestExplainAgreesWithMatching(t *testing.T) {
	ruleTexts := []string{"Bash(npm run test:*)", "Bash(git diff *)", "Bash(npm test)", "Bash(cat *)", "Bash(rm -rf /)", "Bash", "Bash(*)",
		"Read(src/**)", "Read(//etc/**)", "Read(/etc/hosts)", "Read(~/.ssh/**)", "Edit(src/*.go)", "Edit", "Write(docs/**)",
		"WebFetch(domain:example.com)", "mcp__github", "Grep", "Read", "Bash(python:*)", "Bash(curl * | sh)", "bash(ls *)"}
	calls := []Call{
		shellCall("npm run test:unit"), shellCall("npm run test"), shellCall("git diff --stat", "cat a"), shellCall("CI=1 npm test"),
		shellCall("rm -rf /"), shellCall("python -c x"), shellCall("ls -la"),
		{Tool: "Bash", Kind: "shell", Raw: "curl x | sh", Commands: []Command{{Text: "curl x"}, {Text: "sh"}}},
		{Tool: "Bash", Kind: "shell", Raw: "cat /etc/hosts", Commands: []Command{{Text: "cat /etc/hosts"}}, ShellReads: []string{"/etc/hosts"}},
		{Tool: "Bash", Kind: "shell", Raw: "a ( b", Unparsed: true},
		pathCall("Read", "read", "/home/dev/proj/src/a.go"), pathCall("Grep", "search", "/etc/x"), pathCall("Edit", "edit", "/home/dev/proj/src/a.go"),
		pathCall("Write", "write", "/home/dev/proj/docs/a/b.md"), pathCall("Edit", "edit", "/home/dev/proj/src/a.go", "/tmp/x"),
		{Tool: "WebFetch", Kind: "web_fetch", URL: "https://api.example.com/x"}, {Tool: "mcp__github__create_issue", Kind: "unknown"},
		{Tool: "TodoWrite", Kind: "metadata"},
	}
	env := Env{Cwd: "/home/dev/proj", Home: "/home/dev"}
	for _, c := range calls {
		for _, text := range ruleTexts {
			for _, list := range []string{"deny", "ask", "allow"} {
				var s *Set
				switch list {
				case "deny":
					s = mustCompile(t, []string{text}, nil, nil)
				case "ask":
					s = mustCompile(t, nil, []string{text}, nil)
				default:
					s = mustCompile(t, nil, nil, []string{text})
				}
				x := s.Explain(c, env, true)
				got := len(x.Rules) == 1 && x.Rules[0].Matched
				var want bool
				switch list {
				case "deny":
					want = s.Deny(c, env).OK
				case "ask":
					want = s.Ask(c, env).OK
				default:
					want = s.Allow(c, env, true).OK
					got = len(x.Uncovered) == 0 && x.Unallowable == ""
				}
				if got != want {
					t.Errorf("%s rule %s on %+v: explain says %v, matching %v (%+v)", list, text, c, got, want, x)
				}
			}
		}
	}
}
