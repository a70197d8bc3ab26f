package rules

import (
	"errors"
	"strings"
	"testing"
)

// fields is what a Rule exposes, for comparisons.
type fields struct {
	Text, Tool, Specifier string
	HasSpecifier          bool
}

func fieldsOf(r Rule) fields { return fields{r.Text, r.Tool, r.Specifier, r.HasSpecifier} }

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want fields
	}{
		{"Bash", fields{"Bash", "Bash", "", false}},
		{"  Bash \n", fields{"Bash", "Bash", "", false}},
		{"Bash(*)", fields{"Bash(*)", "Bash", "*", true}},
		{"Bash(npm run test:*)", fields{"Bash(npm run test:*)", "Bash", "npm run test:*", true}},
		{"Bash( git diff * )", fields{"Bash( git diff * )", "Bash", "git diff *", true}},
		{"Bash(echo (a))", fields{"Bash(echo (a))", "Bash", "echo (a)", true}},
		{"Bash(npm run test:unit)", fields{"Bash(npm run test:unit)", "Bash", "npm run test:unit", true}},
		{"Read(//etc/passwd)", fields{"Read(//etc/passwd)", "Read", "//etc/passwd", true}},
		{"Read(//)", fields{"Read(//)", "Read", "//", true}},
		{"Edit(~/.ssh/**)", fields{"Edit(~/.ssh/**)", "Edit", "~/.ssh/**", true}},
		{"Read(../shared/**)", fields{"Read(../shared/**)", "Read", "../shared/**", true}},
		{"Write(src/[ab].go)", fields{"Write(src/[ab].go)", "Write", "src/[ab].go", true}},
		{"WebFetch(domain:example.com)", fields{"WebFetch(domain:example.com)", "WebFetch", "domain:example.com", true}},
		{"WebFetch(domain:*.Example.COM)", fields{"WebFetch(domain:*.Example.COM)", "WebFetch", "domain:*.Example.COM", true}},
		{"WebFetch(domain:127.0.0.1)", fields{"WebFetch(domain:127.0.0.1)", "WebFetch", "domain:127.0.0.1", true}},
		{"WebFetch(domain:[::1])", fields{"WebFetch(domain:[::1])", "WebFetch", "domain:[::1]", true}},
		{"WebSearch", fields{"WebSearch", "WebSearch", "", false}},
		{"WebSearch(*)", fields{"WebSearch(*)", "WebSearch", "*", true}},
		{"mcp__github", fields{"mcp__github", "mcp__github", "", false}},
		{"mcp__github__*", fields{"mcp__github__*", "mcp__github__*", "", false}},
		{"mcp__github__create_issue", fields{"mcp__github__create_issue", "mcp__github__create_issue", "", false}},
		{"mcp__my-server__do.it", fields{"mcp__my-server__do.it", "mcp__my-server__do.it", "", false}},
		{"Grep", fields{"Grep", "Grep", "", false}},
		{"run_shell_command(git status)", fields{"run_shell_command(git status)", "run_shell_command", "git status", true}},
		{"Task(Explore)", fields{"Task(Explore)", "Task", "Explore", true}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil || fieldsOf(got) != tt.want {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tt.in, fieldsOf(got), err, tt.want)
			}
			again, err := Parse(got.Text)
			if err != nil || fieldsOf(again) != tt.want {
				t.Fatalf("Parse(Parse(%q).Text) = %+v, %v; want %+v", tt.in, fieldsOf(again), err, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in, want string // want: a substring of the error
	}{
		{"", "empty rule"},
		{" \t\n", "empty rule"},
		{"Bash(", "missing closing parenthesis"},
		{"Bash(ls", "missing closing parenthesis"},
		{"Bash()", "empty specifier"},
		{"Bash(  )", "empty specifier"},
		{"Read()", "empty specifier"},
		{"Bash(ls)x", "text after the closing parenthesis"},
		{"Bash)", "unbalanced parentheses"},
		{"Bash(ls))", "unbalanced parentheses"},
		{"Bash((ls)", "unbalanced parentheses"},
		{"Bash(a)(b)", "unbalanced parentheses"},
		{"(ls)", "missing tool name"},
		{"Ba sh", "bad tool name"},
		{"Bash (ls)", "bad tool name"},
		{"*", "bad tool name"},
		{"Bash*", "bad tool name"},
		{"Bash*(ls)", "bad tool name"},
		{"Bäsh", "bad tool name"},
		{"Bash(npm:* x)", `":*" is only allowed at the end`},
		{"Bash(npm:*:*)", `":*" is only allowed at the end`},
		{"Bash(:*)", `nothing before ":*"`},
		{"Bash( :*)", `nothing before ":*"`},
		{"Bash(ls\n)", "control character"},
		{"Bash(ls\x00)", "control character"},
		{"mcp__", "bad MCP tool name"},
		{"mcp____x", "bad MCP tool name"},
		{"mcp__github__", "bad MCP tool name"},
		{"mcp____*", "bad MCP server name"},
		{"mcp__git*hub", "bad MCP tool name"},
		{"mcp__github(x)", "MCP rules take no specifier"},
		{"mcp__github__create_issue(x)", "MCP rules take no specifier"},
		{"WebSearch(cats)", "WebSearch rules take no specifier"},
		{"WebFetch(https://example.com/*)", "WebFetch specifiers are domain:HOST"},
		{"WebFetch(domain:)", "empty domain"},
		{"WebFetch(domain:*.)", "empty domain"},
		{"WebFetch(domain:exa mple.com)", "bad domain"},
		{"WebFetch(domain:https://example.com)", "bad domain"},
		{"WebFetch(domain:example.com:443)", "bad domain"},
		{"WebFetch(domain:example.com/x)", "bad domain"},
		{"WebFetch(domain:ex*ample.com)", "bad domain"},
		{"WebFetch(domain:a..b)", "empty label"},
		{"WebFetch(domain:bücher.example)", "punycode"},
		{"WebFetch(domain:127.1)", "bad IP address"},
		{"WebFetch(domain:0x7f.0.0.1)", "bad IP address"},
		{"WebFetch(domain:[1.2.3.4])", "bad IPv6 address"},
		{"Read(~root/.ssh)", `"~user" paths are not supported`},
		{"Read(src/**/../x)", `".." after a wildcard`},
		{"Read(src/[ab)", "bad pattern"},
		{"Edit(x\\)", "bad pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %+v, %v; want an error containing %q", tt.in, fieldsOf(got), err, tt.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Rule != tt.in {
				t.Fatalf("Parse(%q) error %#v does not name the rule", tt.in, err)
			}
			if !strings.Contains(err.Error(), `rule "`) {
				t.Fatalf("Parse(%q) error %q does not name the rule", tt.in, err)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name             string
		deny, ask, allow []string
		want             string
		wantList         string
		wantIndex        int
	}{
		{"allow prefix", nil, nil, []string{"Bash", "Read", "Bash(npm:* run)"},
			`allow[2] "Bash(npm:* run)": ":*" is only allowed at the end`, "allow", 2},
		{"deny empty", []string{"Bash(rm:*)", ""}, nil, nil, `deny[1] "": empty rule`, "deny", 1},
		{"ask spec", nil, []string{"Edit()"}, nil, `ask[0] "Edit()": empty specifier`, "ask", 0},
		{"first bad list wins", []string{"Bash("}, []string{"Bash("}, []string{"Bash("}, `deny[0] "Bash(": missing closing parenthesis`, "deny", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, w, err := Compile(tt.deny, tt.ask, tt.allow)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Compile = %v, %v, %v; want an error starting %q", s, w, err, tt.want)
			}
			var le *ListError
			if !errors.As(err, &le) || le.List != tt.wantList || le.Index != tt.wantIndex {
				t.Fatalf("error %#v: want list %s index %d", err, tt.wantList, tt.wantIndex)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v does not wrap a *ParseError", err)
			}
		})
	}
}

func TestZeroRuleNeverMatches(t *testing.T) {
	s := &Set{deny: []Rule{{}}, ask: []Rule{{Text: "Bash", Tool: "Bash"}}, allow: []Rule{{}}}
	c := Call{Tool: "Bash", Kind: "shell", Commands: []Command{{Text: "ls"}}}
	if s.Deny(c, testEnv).OK || s.Ask(c, testEnv).OK || s.Allow(c, testEnv, false).OK {
		t.Fatal("a Rule not made by Parse matched")
	}
	var nilSet *Set
	if nilSet.Deny(c, testEnv).OK || nilSet.Ask(c, testEnv).OK || nilSet.Allow(c, testEnv, false).OK || nilSet.Warnings() != nil {
		t.Fatal("the nil Set matched")
	}
}
