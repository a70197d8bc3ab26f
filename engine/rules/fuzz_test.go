package rules

import (
	"errors"
	"testing"
)

var fuzzKinds = []string{"shell", "read", "search", "edit", "write", "notebook_edit", "patch", "web_fetch", "web_search", "metadata", "unknown", ""}

// FuzzParse checks that Parse never panics, that a parsed rule's Text
// parses to an equal rule, and that matching never panics and keeps the
// invariants: allow with auto on implies allow with auto off, and a rule
// that allows a one-part call also denies it as a deny rule.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"Bash", "Bash(*)", "Bash(npm run test:*)", "Bash(git diff *)", "Bash(npm:* x)", "Bash(FOO=1 npm test)",
		"Read(//etc/passwd)", "Read(~/.ssh/**)", "Edit(/config/*.yaml)", "Read(./src/**)", "Read(src/*.go)",
		"Read(**/*.env)", "Read(*.md)", "Read(./secrets/)", "Read(../x/[a-z]?)", "Read(//)", "Read(~)",
		"WebFetch(domain:example.com)", "WebFetch(domain:*.example.com)", "WebFetch(domain:[::1])",
		"mcp__github", "mcp__github__*", "mcp__github__create_issue", "Grep", "run_shell_command(git:*)",
		"Task(Explore)", "Bash(", "Bash()", "(x)", "Bash(a)(b)",
	} {
		f.Add(seed, "npm run test -- --watch", "/home/dev/proj/src/a.go")
	}
	f.Add("Bash(rm -rf:*)", "sudo -u x RM  -rf /", "https://example.com@evil.com/")
	f.Add("WebFetch(domain:example.com)", "https://api.example.com/x", "http://127.1/")
	f.Add("Read(~/.ssh/**)", "cat ~/.ssh/id", "/home/dev/proj/../.ssh/id")
	f.Fuzz(fuzzOne)
}

func fuzzOne(t *testing.T, text, a, b string) {
	{
		r, err := Parse(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Rule != text {
				t.Fatalf("Parse(%q) error %v is not a *ParseError naming the rule", text, err)
			}
			return
		}
		again, err := Parse(r.Text)
		if err != nil || fieldsOf(again) != fieldsOf(r) {
			t.Fatalf("Parse(%q) = %+v, but Parse(%q) = %+v, %v", text, fieldsOf(r), r.Text, fieldsOf(again), err)
		}
		one, _, err := Compile([]string{text}, []string{text}, []string{text})
		if err != nil {
			t.Fatalf("Compile of a parsed rule: %v", err)
		}
		envs := []Env{testEnv, {}, {Cwd: "/", Root: "/", Home: "/"}}
		for _, kind := range fuzzKinds {
			for _, tool := range []string{r.Tool, "x"} {
				calls := []Call{
					{Tool: tool, Kind: kind, Commands: []Command{cmd(a)}, Raw: a, Paths: []string{b}, ShellReads: []string{b}, ShellWrites: []string{a}, URL: b},
					{Tool: tool, Kind: kind, Commands: []Command{{Env: []string{a}, Text: b}}, Raw: a + b, Unparsed: true, Paths: []string{a, b}, URL: a},
					{Tool: tool, Kind: kind, Commands: []Command{{Text: a}}, Paths: []string{a}, URL: a},
					{Tool: tool, Kind: kind},
				}
				for _, c := range calls {
					for _, e := range envs {
						deny := one.Deny(c, e)
						ask := one.Ask(c, e)
						manual := one.Allow(c, e, false)
						auto := one.Allow(c, e, true)
						if deny.OK != ask.OK {
							t.Fatalf("%s on %+v: deny %v ask %v", text, c, deny.OK, ask.OK)
						}
						if auto.OK && !manual.OK {
							t.Fatalf("%s on %+v: allowed in auto mode only", text, c)
						}
						parts := len(c.Commands)
						if isPathKind(kind) {
							parts = len(c.Paths)
						}
						if manual.OK && parts <= 1 && !deny.OK {
							t.Fatalf("%s on %+v in %+v: allows but does not deny", text, c, e)
						}
					}
				}
			}
		}
	}
}
