package engine

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Rule is one compiled permission rule: "Tool" or "Tool(specifier)".
//
// This is the first, deliberately small form of the rule language: the tool
// part matches the agent's tool name or a kind's rule name (Bash, Edit,
// Write, Read, WebFetch, WebSearch); the specifier is a glob in which '*'
// matches any run of characters, and the legacy "prefix:*" matches the
// prefix as a whole word. It is matched against the shell command, each
// target path (absolute, cleaned) or the URL.
type Rule struct {
	Text      string
	Tool      string
	Specifier string
	HasSpec   bool
}

// ruleKinds is which kinds a rule's tool name covers besides the exact name.
var ruleKinds = map[string][]Kind{
	"Bash":      {KindShell},
	"Edit":      {KindEdit, KindWrite, KindNotebookEdit, KindPatch},
	"Write":     {KindWrite},
	"Read":      {KindRead, KindSearch},
	"WebFetch":  {KindWebFetch},
	"WebSearch": {KindWebSearch},
}

// ParseRule compiles one rule.
func ParseRule(text string) (Rule, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return Rule{}, fmt.Errorf("empty rule")
	}
	r := Rule{Text: s, Tool: s}
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return Rule{}, fmt.Errorf("rule %q: missing closing parenthesis", text)
		}
		r.Tool, r.Specifier, r.HasSpec = s[:i], s[i+1:len(s)-1], true
		if r.Specifier == "" {
			return Rule{}, fmt.Errorf("rule %q: empty specifier (write %q to match every call)", text, r.Tool)
		}
	}
	if r.Tool == "" || strings.ContainsAny(r.Tool, " \t\n()*") {
		return Rule{}, fmt.Errorf("rule %q: bad tool name %q", text, r.Tool)
	}
	return r, nil
}

// ParseRules compiles a list; the error names the list and the index.
func ParseRules(list string, texts []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(texts))
	for i, t := range texts {
		r, err := ParseRule(t)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", list, i, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// matchMode says whether a rule must match every subject of a call (allow)
// or any one of them (deny, ask): both err on the side of caution.
type matchMode int

const (
	matchAny matchMode = iota
	matchAll
)

func (r Rule) coversTool(c *call) bool {
	if r.Tool == c.name {
		return true
	}
	for _, k := range ruleKinds[r.Tool] {
		if k == c.kind {
			return true
		}
	}
	return false
}

// matches reports whether the rule applies to the call.
func (r Rule) matches(c *call, mode matchMode) bool {
	if !r.coversTool(c) {
		return false
	}
	if !r.HasSpec {
		return true
	}
	subjects := c.subjects(mode)
	if len(subjects) == 0 {
		return false
	}
	for _, s := range subjects {
		ok := globMatch(r.Specifier, s)
		if ok && mode == matchAny {
			return true
		}
		if !ok && mode == matchAll {
			return false
		}
	}
	return mode == matchAll
}

// subjects are the strings a specifier is matched against. For a shell
// command under an allow rule it is the whole command, and only when the
// command has no shell control syntax: "git status*" must never allow
// "git status; rm -rf ~". Under deny and ask rules each segment between
// control operators is a subject too, so "rm *" catches "ls && rm -rf x".
func (c *call) subjects(mode matchMode) []string {
	switch {
	case c.kind == KindShell || c.hasCommand:
		if !c.hasCommand {
			return nil
		}
		if mode == matchAll {
			if strings.ContainsAny(c.command, shellSyntax) {
				return nil
			}
			return []string{strings.TrimSpace(c.command)}
		}
		return append([]string{strings.TrimSpace(c.command)}, shellSegments(c.command)...)
	case len(c.targets) > 0:
		return c.targets
	case c.url != "":
		return []string{c.url}
	}
	return nil
}

// shellSyntax is every character that lets one command line run something
// other than its first simple command.
const shellSyntax = ";&|<>()$`\n\r{}\\'\"*?[]~!#"

func shellSegments(cmd string) []string {
	seps := func(r rune) bool { return strings.ContainsRune(";&|\n\r()`{}", r) }
	var out []string
	for f := range strings.FieldsFuncSeq(strings.ReplaceAll(cmd, "$(", "("), seps) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// globMatch matches s against pattern, where '*' matches any run of
// characters (slashes included) and a trailing ":*" matches the prefix as a
// whole word.
func globMatch(pattern, s string) bool {
	if p, ok := strings.CutSuffix(pattern, ":*"); ok {
		return s == p || strings.HasPrefix(s, p+" ")
	}
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return s == pattern
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, last)
}

// cleanTarget absolutizes a target path against the working directory for
// rule matching. Containment checks do not use it: they resolve symlinks.
func cleanTarget(cwd, p string) string {
	if !filepath.IsAbs(p) && cwd != "" {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}
