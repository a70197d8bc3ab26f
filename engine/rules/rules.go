// Package rules is toolgate's deterministic permission-rule language: the
// rule syntax of Claude Code's settings ("Tool" or "Tool(specifier)"),
// compiled once and matched against a plain description of a tool call.
//
// The package is pure: no I/O, no shell parsing (the caller hands over the
// simple commands of a shell call), no filesystem access (paths are matched
// lexically, as given).
//
// # Tools
//
// Bash, Read, Edit, Write, NotebookEdit, WebFetch and WebSearch name a kind of
// tool, whatever the agent calls it: Bash covers every shell tool, Read every
// read and search tool, Edit every file-writing tool (edit, write,
// notebook_edit, patch), Write the write kind, NotebookEdit the notebook_edit
// kind, WebFetch and WebSearch their kinds. mcp__server covers every tool of
// that MCP server (so does mcp__server__*), mcp__server__tool exactly one.
// Any other name matches the agent's tool name exactly (Grep,
// run_shell_command).
//
// # Specifiers
//
// Tool(*) is the same as Tool: every call. Otherwise:
//
//   - Bash: "npm run test:*" (legacy prefix: the command is "npm run test"
//     or starts with "npm run test "), "git diff *" (glob: '*' matches any
//     run of characters, spaces included; a trailing " *" may also match
//     nothing, so "git diff *" matches "git diff"), "npm test" (exact).
//     Matched against each simple command of the call.
//   - Read, Edit, Write, NotebookEdit: gitignore-style path patterns;
//     "//abs/path", "~/path" (home), "/path" (Env.Root, or the working
//     directory when it is empty, as toolgate's engine leaves it), "./path"
//     or "path" (working directory). '*' and '?' stay within one path
//     segment, "**" spans segments. A pattern that matches a directory
//     matches everything under it (so a trailing "/" or "/**" changes
//     nothing), and a pattern without a slash ("*.env") matches at any
//     depth below the working directory. Tool(*) matches every path.
//   - WebFetch: "domain:example.com" matches that host and its subdomains;
//     "domain:*.example.com" only the subdomains.
//   - Any other tool name: the specifier is read the way the call's kind
//     needs (command, path or domain). For a call offering nothing to read
//     it against (Task(Explore) on a metadata call), deny and ask rules
//     match every call of that tool and allow rules none.
//
// # Matching
//
// Deny and ask rules match when any part of a call matches (one simple
// command, one path, one path a shell command reads or writes) and err
// towards matching; allow rules must vouch for every part and err towards
// not matching. See Set.
package rules

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/toolgate/toolgate/engine/vocab"
)

// Rule is one parsed permission rule. Only Parse makes a usable Rule (the
// zero Rule never matches); compare rules by their exported fields, not with
// ==, which also compares the compiled form.
type Rule struct {
	// Text is the rule as written, without surrounding white space.
	Text string
	// Tool is the part before the parenthesis.
	Tool string
	// Specifier is the part inside the parentheses, without surrounding
	// white space; "" when HasSpecifier is false.
	Specifier string
	// HasSpecifier reports whether the rule had parentheses.
	HasSpecifier bool

	m *matcher
}

// String returns the rule's text.
func (r Rule) String() string { return r.Text }

// ParseError is a rule that cannot be parsed.
type ParseError struct {
	// Rule is the rule as given.
	Rule string
	// Problem says what is wrong with it.
	Problem string
}

// Error implements error.
func (e *ParseError) Error() string { return fmt.Sprintf("rule %q: %s", e.Rule, e.Problem) }

// family is what a rule's tool name covers.
type family int

const (
	famLiteral family = iota // exact tool name
	famBash
	famRead
	famEdit
	famWrite
	famNotebookEdit
	famWebFetch
	famWebSearch
	famMCP
)

var families = map[string]family{
	"Bash":         famBash,
	"Read":         famRead,
	"Edit":         famEdit,
	"Write":        famWrite,
	"NotebookEdit": famNotebookEdit,
	"WebFetch":     famWebFetch,
	"WebSearch":    famWebSearch,
}

// isPathFamily reports whether the family's specifier is a path pattern.
func (f family) isPathFamily() bool {
	return f == famRead || f == famEdit || f == famWrite || f == famNotebookEdit
}

// isEditFamily reports whether the family's rules cover writing files.
func (f family) isEditFamily() bool {
	return f == famEdit || f == famWrite || f == famNotebookEdit
}

// matcher is a rule compiled.
type matcher struct {
	fam  family
	name string // the tool name
	// mcpPrefix is "mcp__server__" for a rule covering a whole MCP server.
	mcpPrefix string
	// any: no specifier, or "*".
	any bool
	// The specifier compiled for the subjects it can be matched against; nil
	// when the rule has no such reading. A literal tool name gets every
	// reading that compiles.
	cmd  *cmdPattern
	path *pathPattern
	web  *domainPattern
	// shellDanger and editDanger say why the rule, as an allow rule, hands
	// out arbitrary code execution for shell calls and file writes ("" when
	// it does not).
	shellDanger, editDanger string
}

// Parse parses one rule. The error, a *ParseError, names the rule and the
// problem.
func Parse(text string) (Rule, error) {
	fail := func(format string, a ...any) (Rule, error) {
		return Rule{}, &ParseError{Rule: text, Problem: fmt.Sprintf(format, a...)}
	}
	s := strings.TrimSpace(text)
	if s == "" {
		return fail("empty rule")
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }); i >= 0 {
		return fail("control character %q at byte %d", s[i:i+1], i)
	}
	r := Rule{Text: s, Tool: s}
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			if strings.IndexByte(s[i:], ')') >= 0 {
				return fail("text after the closing parenthesis (a rule is Tool or Tool(specifier))")
			}
			return fail("missing closing parenthesis")
		}
		inner := s[i+1 : len(s)-1]
		if !balanced(inner) {
			return fail("unbalanced parentheses in the specifier %q", inner)
		}
		r.Tool, r.Specifier, r.HasSpecifier = s[:i], strings.TrimSpace(inner), true
		if r.Specifier == "" {
			return fail("empty specifier (write %s or %s(*) to match every call)", r.Tool, r.Tool)
		}
	} else if strings.IndexByte(s, ')') >= 0 {
		return fail("unbalanced parentheses (a rule is Tool or Tool(specifier))")
	}
	m, problem := compile(r.Tool, r.Specifier, r.HasSpecifier)
	if problem != "" {
		return fail("%s", problem)
	}
	r.m = m
	return r, nil
}

// balanced reports whether the parentheses in s nest properly.
func balanced(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// validToolName reports whether every byte of name may appear in a tool name.
func validToolName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// compile builds the matcher of a rule; a non-empty problem says why it
// cannot be.
func compile(tool, spec string, has bool) (*matcher, string) {
	m := &matcher{name: tool, any: !has || spec == "*"}
	if tool == "" {
		return nil, "missing tool name before the parenthesis"
	}
	if fam, ok := families[tool]; ok {
		m.fam = fam
	} else if rest, ok := strings.CutPrefix(tool, "mcp__"); ok {
		m.fam = famMCP
		if server, ok := strings.CutSuffix(rest, "__*"); ok {
			if !validToolName(server) || strings.HasPrefix(server, "_") || strings.HasSuffix(server, "_") {
				return nil, fmt.Sprintf("bad MCP server name %q in tool name %q", server, tool)
			}
			m.mcpPrefix = "mcp__" + server + "__"
		} else {
			if !validToolName(rest) || strings.HasPrefix(rest, "_") || strings.HasSuffix(rest, "_") {
				return nil, fmt.Sprintf("bad MCP tool name %q (write mcp__server, mcp__server__* or mcp__server__tool)", tool)
			}
			if !strings.Contains(rest, "__") {
				m.mcpPrefix = tool + "__"
			}
		}
	} else if !validToolName(tool) {
		return nil, fmt.Sprintf("bad tool name %q (letters, digits, '_', '-' and '.' only)", tool)
	}
	if m.any {
		if m.fam == famBash || m.fam == famLiteral {
			m.shellDanger = "matches every shell command"
		}
		if m.fam.isEditFamily() || m.fam == famLiteral {
			m.editDanger = "matches every file, shell start-up files and agent settings included"
		}
		return m, ""
	}
	switch m.fam {
	case famMCP:
		return nil, fmt.Sprintf("MCP rules take no specifier (write %s)", tool)
	case famWebSearch:
		return nil, "WebSearch rules take no specifier (write WebSearch)"
	case famBash:
		p, problem := compileCmd(spec)
		if problem != "" {
			return nil, problem
		}
		m.cmd, m.shellDanger = p, p.danger()
	case famRead, famEdit, famWrite, famNotebookEdit:
		p, problem := compilePath(spec)
		if problem != "" {
			return nil, problem
		}
		m.path = p
		if m.fam.isEditFamily() {
			m.editDanger = p.danger()
		}
	case famWebFetch:
		p, problem := compileDomain(spec)
		if problem != "" {
			return nil, problem
		}
		m.web = p
	case famLiteral:
		// The call's kind decides which reading applies; keep every one
		// that compiles. The shell reading's problem is the one reported:
		// the path reading rejects almost nothing.
		cmd, cmdProblem := compileCmd(spec)
		path, pathProblem := compilePath(spec)
		if cmdProblem != "" && pathProblem != "" {
			return nil, cmdProblem
		}
		if cmdProblem == "" {
			m.cmd, m.shellDanger = cmd, cmd.danger()
		}
		if pathProblem == "" {
			m.path, m.editDanger = path, path.danger()
		}
		if strings.HasPrefix(spec, "domain:") {
			if web, problem := compileDomain(spec); problem == "" {
				m.web = web
			}
		}
	}
	return m, ""
}

// Call kinds, as the caller names them in Call.Kind: the vocabulary's.
const (
	kindShell        = string(vocab.KindShell)
	kindRead         = string(vocab.KindRead)
	kindSearch       = string(vocab.KindSearch)
	kindEdit         = string(vocab.KindEdit)
	kindWrite        = string(vocab.KindWrite)
	kindNotebookEdit = string(vocab.KindNotebookEdit)
	kindPatch        = string(vocab.KindPatch)
	kindWebFetch     = string(vocab.KindWebFetch)
	kindWebSearch    = string(vocab.KindWebSearch)
)

func isPathKind(k string) bool {
	switch k {
	case kindRead, kindSearch, kindEdit, kindWrite, kindNotebookEdit, kindPatch:
		return true
	}
	return false
}

// familyKind reports whether the kind is one the kind names cover.
func familyKind(k string) bool {
	return k == kindShell || isPathKind(k) || k == kindWebFetch || k == kindWebSearch
}

func isEditKind(k string) bool {
	switch k {
	case kindEdit, kindWrite, kindNotebookEdit, kindPatch:
		return true
	}
	return false
}

// covers reports whether the rule's tool name covers the call's tool. For
// a kind name (Bash, Read, ...) the call's kind is what counts when it is
// one those names cover: a tool named "Read" that runs shell commands is a
// shell call, for Bash rules only.
func (m *matcher) covers(c *Call) bool {
	if c.Tool == m.name && (m.fam == famLiteral || m.fam != famMCP && !familyKind(c.Kind)) {
		return true
	}
	switch m.fam {
	case famBash:
		return c.Kind == kindShell
	case famRead:
		return c.Kind == kindRead || c.Kind == kindSearch
	case famEdit:
		return isEditKind(c.Kind)
	case famWrite:
		return c.Kind == kindWrite
	case famNotebookEdit:
		return c.Kind == kindNotebookEdit
	case famWebFetch:
		return c.Kind == kindWebFetch
	case famWebSearch:
		return c.Kind == kindWebSearch
	case famMCP:
		if m.mcpPrefix != "" {
			return c.Tool+"__" == m.mcpPrefix || strings.HasPrefix(c.Tool, m.mcpPrefix) && len(c.Tool) > len(m.mcpPrefix)
		}
		return c.Tool == m.name
	}
	return false
}

// danger says why the rule, as an allow rule, must not apply to the call in
// auto mode ("" when it may).
func (m *matcher) danger(c *Call) string {
	switch {
	case c.Kind == kindShell:
		return m.shellDanger
	case isEditKind(c.Kind):
		return m.editDanger
	}
	return ""
}
