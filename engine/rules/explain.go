package rules

import (
	"fmt"
	"path"
	"strings"
)

// Explaining rules: which rules match a call, and which nearly match and
// why they do not. Nothing here decides: Set.Deny, Set.Ask and Set.Allow
// do, and Explain reuses their matching so that it cannot disagree with
// them.
//
// A near miss is a rule that does not match, and of which one of these
// holds (a small notion on purpose: each says precisely what differs):
//
//   - Bash and other command readings: the rule covers the call's tool,
//     and a command of the call has an exact rule's words and more; or
//     runs the last word of the rule's literal prefix (its specifier up
//     to the first '*', trailing blanks dropped) on instead of ending it;
//     or stops short of the prefix at a word boundary; or starts with a
//     prefix of two words or more and does not match the glob's later
//     text; or matches only with letters compared ignoring case (allow
//     rules compare exactly), or only without its VAR= prefixes (allow
//     rules match those only when they spell them).
//   - Path rules: the rule covers the call's tool (deny and ask rules
//     also a shell command's reads and writes), and the path lies at or
//     below the pattern's literal directory (its anchor and the segments
//     before the first wildcard; at least one such segment) but the rest
//     of the pattern does not match; or the pattern would match the path
//     if it were not anchored where it is (a "/etc/x" rule is relative to
//     the working directory); or it matches only ignoring case (allow);
//     or it is anchored at ~ and no home directory is known (allow).
//     A glob whose later text does not match is a near miss only when its
//     literal prefix has two words or more.
//   - The tool: the rule's pattern matches but its tool does not cover the
//     call: a tool name that differs only in case, an edit rule of another
//     edit tool (Write for an Edit), or a Read or Edit allow rule for a
//     shell command whose reads or writes it matches.
//   - An allow rule that matches but is not applied in auto mode, because
//     it hands out arbitrary code execution.
//
// Every other rule that does not match is left out of the report.

// RuleVerdict is what one rule makes of one call.
type RuleVerdict struct {
	// List is "deny", "ask" or "allow"; Index the rule's position in the
	// set's list (policy rules first, then the request's).
	List  string
	Index int
	Rule  string
	// Matched: the rule matches the call (for an allow rule: it vouches
	// for at least one part of it; Set.Allow needs every part vouched
	// for).
	Matched bool
	// Subject is the part of the call it matched, or the part it nearly
	// matched: a command, a path or a URL.
	Subject string
	// NearMiss: it does not match, and Why says precisely why.
	NearMiss bool
	Why      string
}

// Explanation is what a set of rules makes of one call.
type Explanation struct {
	// Rules are the rules that match and the near misses, deny rules
	// first, then ask, then allow, each in list order.
	Rules []RuleVerdict
	// Uncovered are the parts of the call no applicable allow rule vouches
	// for (why Set.Allow does not allow it), and Unallowable says why no
	// allow rule can allow it at all ("" when one could).
	Uncovered   []string
	Unallowable string
}

// Explain reports the rules of s that match c and those that nearly match
// it (see the package's notes on near misses). auto is as for Allow.
func (s *Set) Explain(c Call, e Env, auto bool) Explanation {
	var x Explanation
	if s == nil {
		return x
	}
	for _, l := range []struct {
		name string
		list []Rule
	}{{"deny", s.deny}, {"ask", s.ask}, {"allow", s.allow}} {
		for i, r := range l.list {
			v := r.Explain(l.name, c, e, auto)
			if v.Matched || v.NearMiss {
				v.List, v.Index = l.name, i
				x.Rules = append(x.Rules, v)
			}
		}
	}
	if c.Kind == kindShell && c.Unparsed {
		x.Unallowable = "the command could not be analysed, and allow rules never match such a command"
		return x
	}
	subjects := allowSubjects(&c)
	if len(subjects) == 0 {
		if !s.Allow(c, e, auto).OK {
			x.Unallowable = "the call has no command, path or URL to match, so only an allow rule without a specifier (or with \"*\") covering its tool allows it"
		}
		return x
	}
	for _, subj := range subjects {
		covered := false
		for j := range s.allow {
			r := &s.allow[j]
			if r.m != nil && r.m.covers(&c) && !(auto && r.m.danger(&c) != "") && r.m.allowMatch(&c, subj, e) {
				covered = true
				break
			}
		}
		if !covered {
			x.Uncovered = append(x.Uncovered, subj)
		}
	}
	return x
}

// allowSubjects are the parts of a call allow rules must each vouch for,
// as Set.Allow builds them.
func allowSubjects(c *Call) []string {
	switch {
	case c.Kind == kindShell:
		out := make([]string, 0, len(c.Commands))
		for _, cmd := range c.Commands {
			out = append(out, allowSubject(cmd))
		}
		return out
	case isPathKind(c.Kind):
		return c.Paths
	case c.Kind == kindWebFetch && c.URL != "":
		return []string{c.URL}
	}
	return nil
}

// allowSubject is a command as allow rules see it: with its VAR= prefixes.
func allowSubject(cmd Command) string {
	if len(cmd.Env) == 0 {
		return cmd.Text
	}
	return strings.TrimSuffix(strings.Join(cmd.Env, " ")+" "+cmd.Text, " ")
}

// Explain says what the rule, in list ("deny", "ask" or "allow"), makes of
// the call: whether it matches (exactly as the set's matching decides),
// and, when it does not, whether it nearly does and why not.
func (r Rule) Explain(list string, c Call, e Env, auto bool) RuleVerdict {
	v := RuleVerdict{List: list, Rule: r.Text}
	m := r.m
	if m == nil {
		return v
	}
	if list == "allow" {
		return r.explainAllow(v, &c, e, auto)
	}
	if firstAny([]Rule{r}, &c, e).OK {
		v.Matched, v.Subject = true, r.matchedPart(&c, e)
		return v
	}
	return r.nearMiss(v, &c, e, true)
}

func (r Rule) explainAllow(v RuleVerdict, c *Call, e Env, auto bool) RuleVerdict {
	m := r.m
	if c.Kind == kindShell && c.Unparsed {
		return v // said once, for the set
	}
	if !m.covers(c) {
		return r.nearMiss(v, c, e, false)
	}
	subjects := allowSubjects(c)
	matchedSubj, matched := "", false
	if len(subjects) == 0 {
		matched = m.any
	}
	for _, s := range subjects {
		if m.allowMatch(c, s, e) {
			matchedSubj, matched = s, true
			break
		}
	}
	if matched && auto && m.danger(c) != "" {
		v.NearMiss, v.Subject = true, matchedSubj
		v.Why = "it matches, but allow rules that hand out arbitrary code execution are not applied in auto mode: it " + m.danger(c)
		return v
	}
	if matched {
		v.Matched, v.Subject = true, matchedSubj
		return v
	}
	return r.nearMiss(v, c, e, false)
}

// matchedPart finds the part of the call a deny or ask rule matched, by
// matching the rule against the call cut down to one part at a time.
func (r Rule) matchedPart(c *Call, e Env) string {
	one := []Rule{r}
	base := Call{Tool: c.Tool, Kind: c.Kind}
	try := func(part Call, subject string) (string, bool) {
		if firstAny(one, &part, e).OK {
			return subject, true
		}
		return "", false
	}
	for _, cmd := range c.Commands {
		p := base
		p.Commands = []Command{cmd}
		if s, ok := try(p, allowSubject(cmd)); ok {
			return s
		}
	}
	for _, x := range c.Paths {
		p := base
		p.Paths = []string{x}
		if s, ok := try(p, x); ok {
			return s
		}
	}
	for _, x := range c.ShellReads {
		p := base
		p.ShellReads = []string{x}
		if s, ok := try(p, "reads "+x); ok {
			return s
		}
	}
	for _, x := range c.ShellWrites {
		p := base
		p.ShellWrites = []string{x}
		if s, ok := try(p, "writes "+x); ok {
			return s
		}
	}
	if c.URL != "" {
		return c.URL
	}
	if c.Raw != "" {
		return c.Raw
	}
	return c.Tool
}

// nearMiss fills v when the rule, which does not match, nearly does.
// deny is true for deny and ask rules, whose matching errs towards a
// match (case folded, unknown anchors floating).
func (r Rule) nearMiss(v RuleVerdict, c *Call, e Env, deny bool) RuleVerdict {
	m := r.m
	set := func(subject, why string) RuleVerdict {
		v.NearMiss, v.Subject, v.Why = true, subject, why
		return v
	}
	if deny && c.Kind == kindShell && m.fam.isPathFamily() && m.path != nil {
		// Deny and ask path rules see what a shell command reads and
		// writes (firstAny).
		list, verb := c.ShellReads, "reads "
		if m.fam != famRead {
			list, verb = c.ShellWrites, "writes "
		}
		for _, x := range list {
			if why := m.path.whyNot(r.Specifier, x, e, true); why != "" {
				return set(verb+x, why)
			}
		}
		return v
	}
	if !m.covers(c) {
		if subj, why := r.toolMiss(c, e, deny); why != "" {
			return set(subj, why)
		}
		return v
	}
	if m.any {
		return v // covers and matches everything: it matched
	}
	switch {
	case c.Kind == kindShell && m.cmd != nil && (m.fam == famBash || m.fam == famLiteral):
		for _, cmd := range c.Commands {
			if why := r.cmdWhyNot(cmd, deny); why != "" {
				return set(allowSubject(cmd), why)
			}
		}
	case isPathKind(c.Kind) && m.path != nil && (m.fam.isPathFamily() || m.fam == famLiteral):
		for _, x := range c.Paths {
			if why := m.path.whyNot(r.Specifier, x, e, deny); why != "" {
				return set(x, why)
			}
		}
	}
	return v
}

// toolMiss is the near miss of a rule whose tool does not cover the call
// but whose pattern matches it.
func (r Rule) toolMiss(c *Call, e Env, deny bool) (string, string) {
	m := r.m
	if !strings.EqualFold(r.Tool, c.Tool) || r.Tool == c.Tool {
		switch {
		case m.fam.isEditFamily() && isEditKind(c.Kind) && m.path != nil:
			for _, x := range c.Paths {
				if m.path.match(x, e, deny) {
					return x, fmt.Sprintf("its pattern matches, but %s rules do not cover %s, whose kind is %s (%s rules do)", r.Tool, c.Tool, c.Kind, ruleToolFor(c.Kind))
				}
			}
		case !deny && m.fam.isPathFamily() && c.Kind == kindShell && m.path != nil:
			list, verb := c.ShellReads, "reads"
			if m.fam != famRead {
				list, verb = c.ShellWrites, "writes"
			}
			for _, x := range list {
				if m.path.match(x, e, false) {
					return verb + " " + x, fmt.Sprintf("the command %s %s, which its pattern matches, but %s allow rules never allow a shell command: a Bash rule does", verb, x, r.Tool)
				}
			}
		}
		return "", ""
	}
	return c.Tool, fmt.Sprintf("tool names are case-sensitive: the rule names %s, the call's tool is %s", r.Tool, c.Tool)
}

// ruleToolFor names the rule tool that covers a kind of call.
func ruleToolFor(kind string) string {
	switch kind {
	case kindRead, kindSearch:
		return "Read"
	case kindWrite:
		return "Edit and Write"
	case kindNotebookEdit:
		return "Edit and NotebookEdit"
	}
	return "Edit"
}

// cmdWhyNot says why a Bash pattern does not match a command it nearly
// matches, or "" when it is not a near miss.
func (r Rule) cmdWhyNot(cmd Command, deny bool) string {
	p := r.m.cmd
	subj := allowSubject(cmd)
	if !deny && len(cmd.Env) > 0 && p.assigns == "" && p.match(cmd.Text, false) {
		return fmt.Sprintf("the command starts with %s, which the rule does not spell: an allow rule matches a command with VAR= prefixes only when it spells them (or starts with '*')", strings.Join(cmd.Env, " "))
	}
	if deny {
		subj = cmd.Text
	}
	if why := p.whyNot(r.Specifier, subj); why != "" {
		return why
	}
	if !deny && p.match(lowerASCII(subj), true) {
		return "it matches only with letters compared ignoring case; allow rules compare them exactly"
	}
	return ""
}

// whyNot explains why the pattern does not match s when s starts with the
// pattern's literal prefix or stops short of it at a word boundary; ""
// otherwise.
func (p *cmdPattern) whyNot(spec, s string) string {
	s = collapseSpace(s)
	lit := strings.TrimRight(p.parts[0], " ")
	exact := len(p.parts) == 1
	prefixForm := strings.HasSuffix(spec, ":*")
	switch {
	case lit == "":
		// The pattern starts with '*': no literal prefix to compare.
		return ""
	case exact && strings.HasPrefix(s, lit+" "):
		return fmt.Sprintf("the rule has no '*', so it matches exactly the command %q; this one goes on with %q (%s would match its arguments too)",
			lit, s[len(lit):], "Bash("+lit+" *)")
	case strings.HasPrefix(lit, s+" "):
		return fmt.Sprintf("the command stops after %q; the rule needs %q next", s, strings.TrimSpace(lit[len(s):]))
	case exact || !strings.HasPrefix(s, lit):
		return ""
	case !strings.HasPrefix(s, p.parts[0]) && strings.HasSuffix(p.parts[0], " "):
		// "npm run test:*" is "npm run test *": the word ends where the
		// rule's prefix ends.
		word := s[len(lit):]
		if i := strings.IndexByte(word, ' '); i >= 0 {
			word = word[:i]
		}
		form := fmt.Sprintf("the space before '*' makes %q a whole word", lastWord(lit))
		if prefixForm {
			form = fmt.Sprintf("%q is the prefix form, the glob %q: it matches %q alone or followed by a space and arguments", spec, lit+" *", lit)
		}
		return fmt.Sprintf("%s; in this command the word %q runs on into %q, a different word, not %q with arguments (Bash(%s*), with no space, would match it and every other word that starts with %q)",
			form, lastWord(lit), lastWord(lit)+word, lastWord(lit), lit, lastWord(lit))
	}
	// The prefix matches: the rest of the glob does not. Only a prefix
	// of two words or more makes that a near miss: every curl command
	// starts as Bash(curl * | sh) does.
	if !strings.Contains(lit, " ") {
		return ""
	}
	parts := p.parts
	last := parts[len(parts)-1]
	rest := s[len(parts[0]):]
	if !strings.HasSuffix(rest, last) {
		return fmt.Sprintf("the command starts with %q but does not end with %q, as the rule's text after its last '*' requires", parts[0], last)
	}
	rest = rest[:len(rest)-len(last)]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, part)
		if i < 0 {
			return fmt.Sprintf("the command starts with %q, but %q does not follow in it where the rule requires", parts[0], part)
		}
		rest = rest[i+len(part):]
	}
	return ""
}

func lastWord(s string) string {
	if i := strings.LastIndexByte(s, ' '); i >= 0 {
		return s[i+1:]
	}
	return s
}

// whyNot explains why the path pattern does not match the absolute path x
// when it nearly does (see the package's notes), or "".
func (p *pathPattern) whyNot(spec, x string, e Env, deny bool) string {
	s, ok := newPathSubject(x, e, deny)
	if !ok {
		return ""
	}
	base, known := p.base(e)
	if !known {
		if deny {
			return "" // floats: it would have matched
		}
		return fmt.Sprintf("the rule is anchored at %s, which this engine does not know (no home or working directory), so as an allow rule it never matches", anchorName(p.anchor))
	}
	if p.anchor == anchorRoot && p.ups == 0 {
		abs := *p
		abs.anchor = anchorAbs
		if abs.matchSegments(&s, e, deny) {
			return fmt.Sprintf("in a rule, %s is relative to the working directory (%s), not the file system's root; write /%s for the absolute path", spec, path.Join(base, strings.TrimPrefix(spec, "/")), spec)
		}
	}
	if !deny && matchSegs(p.lower, lowerASCII(base), split(lowerASCII(x))) {
		return "it matches only with letters compared ignoring case; allow rules compare them exactly"
	}
	rest, under := below(base, s.segs)
	if !under {
		if matchSegs(p.floating, "/", s.segs) {
			return fmt.Sprintf("the pattern is anchored at %s (%s) and the path is not below it", base, anchorName(p.anchor))
		}
		return ""
	}
	lead := 0
	for lead < len(p.segs) && p.segs[lead] != "**" && !isGlob(p.segs[lead]) {
		lead++
	}
	if lead == 0 || len(rest) < lead {
		return ""
	}
	for i := range lead {
		if rest[i] != p.segs[i] {
			return ""
		}
	}
	dir := path.Join(append([]string{base}, p.segs[:lead]...)...)
	tail, pat := rest[lead:], p.segs[lead:]
	if len(tail) == 0 {
		return fmt.Sprintf("the path is the directory %s itself; the pattern matches only what is below it that %s matches", dir, strings.Join(pat, "/"))
	}
	why := fmt.Sprintf("the path is below %s, but %s does not match %s there", dir, strings.Join(pat, "/"), strings.Join(tail, "/"))
	hasStars := false
	for _, seg := range pat {
		hasStars = hasStars || seg == "**"
	}
	if !hasStars && len(tail) > len(pat) {
		why += fmt.Sprintf(": '*' and '?' stay within one path segment, so it matches %d level(s) below %s and the path is %d below; '**' spans segments", len(pat), dir, len(tail))
	}
	return why
}

func anchorName(a anchor) string {
	switch a {
	case anchorAbs:
		return "the file system's root (//)"
	case anchorHome:
		return "the home directory (~/)"
	case anchorRoot:
		return "the working directory (/path)"
	}
	return "the working directory"
}
