package rules

import (
	"fmt"
	"strings"
)

// Warning is a rule that loads but does not do everything it seems to: an
// allow rule that hands out arbitrary code execution (not applied in auto
// mode), or one that can never match.
type Warning struct {
	// Rule is the rule's text.
	Rule string
	// Problem names the list and index and says what is wrong.
	Problem string
}

// String formats the warning for a log line.
func (w Warning) String() string { return fmt.Sprintf("rule %q: %s", w.Rule, w.Problem) }

// ListError is a rule of a list that cannot be parsed.
type ListError struct {
	// List is "deny", "ask" or "allow"; Index the rule's position in it.
	List  string
	Index int
	// Err says which rule and why.
	Err *ParseError
}

// Error implements error: `allow[2] "Bash(npm:* run)": ":*" is only allowed
// at the end`.
func (e *ListError) Error() string {
	return fmt.Sprintf("%s[%d] %q: %s", e.List, e.Index, e.Err.Rule, e.Err.Problem)
}

// Unwrap returns the *ParseError.
func (e *ListError) Unwrap() error { return e.Err }

// Set is a compiled set of deny, ask and allow rules. A Set is immutable and
// safe for concurrent use; the nil *Set has no rules.
type Set struct {
	deny, ask, allow []Rule
	warnings         []Warning
}

// Compile parses the three lists. The error, a *ListError, names the list,
// the index, the rule and the problem. The warnings (also kept, see
// Set.Warnings) are about allow rules that hand out arbitrary code execution
// and are therefore not applied in auto mode, and allow rules that can never
// match.
func Compile(deny, ask, allow []string) (*Set, []Warning, error) {
	s := &Set{}
	for _, l := range []struct {
		name string
		in   []string
		out  *[]Rule
	}{{"deny", deny, &s.deny}, {"ask", ask, &s.ask}, {"allow", allow, &s.allow}} {
		for i, text := range l.in {
			r, err := Parse(text)
			if err != nil {
				return nil, nil, &ListError{List: l.name, Index: i, Err: err.(*ParseError)}
			}
			*l.out = append(*l.out, r)
		}
	}
	s.warnings = warnings("allow", s.allow)
	return s, s.Warnings(), nil
}

// Merge returns a new set holding s's rules followed by other's, in each
// list: per-request rules on top of a policy. It never removes a rule;
// either set may be nil, and neither is modified.
func (s *Set) Merge(other *Set) *Set {
	out := &Set{}
	for _, x := range []*Set{s, other} {
		if x == nil {
			continue
		}
		out.deny = append(out.deny, x.deny...)
		out.ask = append(out.ask, x.ask...)
		out.allow = append(out.allow, x.allow...)
		out.warnings = append(out.warnings, x.warnings...)
	}
	return out
}

// Warnings returns the warnings of the set's allow rules (for a merged set,
// those of every set merged).
func (s *Set) Warnings() []Warning {
	if s == nil || len(s.warnings) == 0 {
		return nil
	}
	return append([]Warning(nil), s.warnings...)
}

// Call is what a rule can see of a tool call.
type Call struct {
	// Tool is the agent's tool name, e.g. "Bash", "run_shell_command",
	// "mcp__github__create_issue".
	Tool string
	// Kind is the tool's canonical kind: "shell", "read", "search", "edit",
	// "write", "notebook_edit", "patch", "web_fetch", "web_search",
	// "metadata", "background_output" or "unknown".
	Kind string
	// Commands are every simple command of a shell call (may be empty),
	// wrapped and substituted commands included.
	Commands []Command
	// Unparsed reports that the shell command could not be analysed: allow
	// rules never match it, and Bash deny and ask rules are matched against
	// Raw and each piece of it between ; & | ( ) ` { } < > and newlines.
	Unparsed bool
	// Raw is a shell call's whole command line. Bash deny and ask rules are
	// always matched against it too ("Bash(curl * | sh)").
	Raw string
	// Paths are the target paths of read, search and edit kinds, absolute
	// and cleaned.
	Paths []string
	// ShellReads and ShellWrites are the paths a shell command reads and
	// writes (absolute, cleaned). Read deny and ask rules are matched
	// against ShellReads; Edit, Write and NotebookEdit deny and ask rules
	// against ShellWrites. Allow rules ignore both.
	ShellReads, ShellWrites []string
	// URL is a web_fetch call's URL, as the agent gave it.
	URL string

	// memo keeps the shell subjects once built (see Memoize); copies of
	// the call share it.
	memo *memo
}

type memo struct {
	shell []subject
	done  bool
}

// Memoize makes the call keep the subjects its shell commands are
// matched against once a list has built them, for every copy made
// afterwards: a check matches one call against its deny, then its ask
// rules. The call must not change after it.
func (c *Call) Memoize() { c.memo = &memo{} }

// Subjects are the strings Bash deny and ask rules match a shell call
// against, built once.
type Subjects struct{ list []subject }

// ShellSubjects builds the subjects of the call's Commands, Raw and
// Unparsed. They are a pure function of these three, so a caller that
// knows them to be the same for another call (the same command line
// analysed alike) may hand them to it with MemoizeWith.
func ShellSubjects(c *Call) *Subjects { return &Subjects{shellSubjects(c)} }

// Bytes estimates the memory the subjects hold.
func (s *Subjects) Bytes() int {
	n := 24
	for _, x := range s.list {
		n += 32 + len(x.s) + len(x.lower)
	}
	return n
}

// MemoizeWith is Memoize with the shell subjects already built: s must be
// ShellSubjects of a call with the same Commands, Raw and Unparsed.
func (c *Call) MemoizeWith(s *Subjects) { c.memo = &memo{shell: s.list, done: true} }

// Command is one simple command of a shell call.
type Command struct {
	// Env are the command's VAR=value prefixes.
	Env []string
	// Text is the command without its prefixes, spacing normalized:
	// "git diff --stat".
	Text string
}

// Env is where path patterns are anchored. Every field is an absolute path;
// Root "" means "/path" patterns are resolved against Cwd. A pattern whose
// anchor is missing (or not absolute) never matches under an allow rule and,
// under deny and ask rules, matches at any depth of the filesystem
// ("~/.ssh/**" as "**/.ssh/**").
type Env struct {
	Cwd, Root, Home string
}

// Match is the outcome of matching a call against one list.
type Match struct {
	// Rule is the rule that matched (for Allow, the one used for the
	// call's first command or path).
	Rule Rule
	// OK reports whether a rule matched.
	OK bool
}

// Deny returns the first deny rule that matches any part of the call: one
// simple command (or a variant of it, see Call), the raw command line, one
// path, one path a shell command reads (Read rules) or writes (Edit, Write,
// NotebookEdit rules), the URL.
func (s *Set) Deny(c Call, e Env) Match {
	if s == nil {
		return Match{}
	}
	return firstAny(s.deny, &c, e)
}

// Ask returns the first ask rule that matches any part of the call, like
// Deny.
func (s *Set) Ask(c Call, e Env) Match {
	if s == nil {
		return Match{}
	}
	return firstAny(s.ask, &c, e)
}

// Allow reports whether allow rules vouch for every part of the call: every
// simple command, every path, the URL, each matched by some allow rule
// (possibly different ones). A call with no such part is allowed only by a
// rule without a specifier (or with "*") covering the tool. An unparsed
// shell call is never allowed. A command with VAR=value prefixes is matched
// with them ("FOO=1 npm test"), so only a rule spelling them (or starting
// with a wildcard) allows it. When auto is true, rules that hand out
// arbitrary code execution (see Warnings) are skipped.
func (s *Set) Allow(c Call, e Env, auto bool) Match {
	if s == nil || c.Kind == kindShell && c.Unparsed {
		return Match{}
	}
	// Eligible rules are found again for each subject rather than
	// collected: with large policies the list cost more than the scans.
	eligible := func(r *Rule) bool {
		return r.m != nil && r.m.covers(&c) && !(auto && r.m.danger(&c) != "")
	}
	var subjects []string
	switch {
	case c.Kind == kindShell:
		subjects = make([]string, 0, len(c.Commands))
		for _, cmd := range c.Commands {
			subj := cmd.Text
			if len(cmd.Env) > 0 {
				subj = strings.TrimSuffix(strings.Join(cmd.Env, " ")+" "+cmd.Text, " ")
			}
			subjects = append(subjects, subj)
		}
	case isPathKind(c.Kind):
		subjects = c.Paths
	case c.Kind == kindWebFetch && c.URL != "":
		subjects = []string{c.URL}
	}
	if len(subjects) == 0 {
		for i := range s.allow {
			if r := &s.allow[i]; eligible(r) && r.m.any {
				return Match{Rule: *r, OK: true}
			}
		}
		return Match{}
	}
	var first Rule
	for i, subj := range subjects {
		found := false
		for j := range s.allow {
			if r := &s.allow[j]; eligible(r) && r.m.allowMatch(&c, subj, e) {
				if i == 0 {
					first = *r
				}
				found = true
				break
			}
		}
		if !found {
			return Match{}
		}
	}
	return Match{Rule: first, OK: true}
}

// allowMatch reports whether the rule vouches for one subject of the call.
func (m *matcher) allowMatch(c *Call, subj string, e Env) bool {
	if m.any {
		return true
	}
	switch {
	case c.Kind == kindShell:
		if m.cmd == nil || m.fam != famBash && m.fam != famLiteral || strings.ContainsAny(subj, "\x00\n\r") {
			return false
		}
		return m.cmd.match(subj, false)
	case isPathKind(c.Kind):
		if m.path == nil || !(m.fam.isPathFamily() || m.fam == famLiteral) {
			return false
		}
		return m.path.match(subj, e, false)
	case c.Kind == kindWebFetch:
		if m.web == nil || m.fam != famWebFetch && m.fam != famLiteral {
			return false
		}
		return m.web.match(subj, false)
	}
	return false
}

// firstAny returns the first rule matching any part of the call.
func firstAny(rules []Rule, c *Call, e Env) Match {
	// Subjects are prepared once, when a rule first needs them.
	var shell []subject
	shellDone := false
	var paths, reads, writes *[]pathSubject
	prepared := func(cache **[]pathSubject, list []string) []pathSubject {
		if *cache == nil {
			s := pathSubjects(list, e)
			*cache = &s
		}
		return **cache
	}
	for _, r := range rules {
		m := r.m
		if m == nil {
			continue
		}
		// Read and Edit rules see the paths a shell command reads and
		// writes.
		if c.Kind == kindShell && m.fam.isPathFamily() {
			list, cache := c.ShellReads, &reads
			if m.fam != famRead {
				list, cache = c.ShellWrites, &writes
			}
			if m.any && len(list) > 0 {
				return Match{Rule: r, OK: true}
			}
			if m.any || len(list) == 0 {
				continue
			}
			for _, p := range prepared(cache, list) {
				if m.path.matchSubject(&p, e, true) {
					return Match{Rule: r, OK: true}
				}
			}
			continue
		}
		if !m.covers(c) {
			continue
		}
		if m.any {
			return Match{Rule: r, OK: true}
		}
		// The reading of the specifier: the rule's family decides, and for a
		// literal tool name the call's kind.
		var read family
		switch {
		case m.fam != famLiteral:
			read = m.fam
		case c.Kind == kindShell:
			read = famBash
		case isPathKind(c.Kind):
			read = famRead
		case c.Kind == kindWebFetch:
			read = famWebFetch
		}
		matched := false
		switch {
		case read == famBash && m.cmd != nil:
			if !shellDone {
				shell, shellDone = memoShellSubjects(c), true
			}
			for _, sub := range shell {
				if m.cmd.match(sub.s, false) || m.cmd.match(sub.lower, true) {
					matched = true
					break
				}
			}
		case read.isPathFamily() && m.path != nil:
			for _, p := range prepared(&paths, c.Paths) {
				if m.path.matchSubject(&p, e, true) {
					matched = true
					break
				}
			}
		case read == famWebFetch && m.web != nil:
			matched = c.URL != "" && m.web.match(c.URL, true)
		default:
			// A specifier this call offers nothing to check against (a
			// literal tool name of another kind): match, to be safe.
			matched = m.fam == famLiteral
		}
		if matched {
			return Match{Rule: r, OK: true}
		}
	}
	return Match{}
}

// memoShellSubjects is shellSubjects, kept in the call's memo if it has
// one.
func memoShellSubjects(c *Call) []subject {
	if c.memo == nil {
		return shellSubjects(c)
	}
	if !c.memo.done {
		c.memo.shell, c.memo.done = shellSubjects(c), true
	}
	return c.memo.shell
}

// shellSubjects are the strings deny and ask Bash rules are matched against.
func shellSubjects(c *Call) []subject {
	var v variants
	for _, cmd := range c.Commands {
		v.addCommand(cmd.Text)
		if len(cmd.Env) > 0 {
			v.addCommand(strings.Join(cmd.Env, " ") + " " + cmd.Text)
		}
	}
	if c.Raw != "" {
		v.addCommand(c.Raw)
		if c.Unparsed {
			eachPiece(c.Raw, v.addCommand)
		}
	}
	return v.list
}
