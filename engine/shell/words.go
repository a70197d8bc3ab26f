package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wordInfo is what the analysis knows about one shell word before it runs.
type wordInfo struct {
	val  string // value with quotes removed when static; the source text otherwise
	cred string // form for credential checks: simple $NAME kept, quotes removed
	pos  int    // byte offsets in the scope's source; -1 for synthetic words
	end  int

	dyn   bool // value only known at run time
	split bool // has an unquoted expansion: may split into several words
	pipe  bool // the word is exactly one <(..): it expands to a /dev/fd path
	glob  bool // has an unquoted glob metacharacter or extended glob
	lead  bool // starts with an unquoted glob metacharacter: may expand to "-..."
	brace bool // has an unquoted brace expansion ({a,b} or {1..3})
	xargs bool // supplied by xargs at run time
	ansi  bool // uses $'..' or $"..", which sh and dash read differently
}

// synthetic returns a static word that does not come from the source.
func synthetic(v string) wordInfo { return wordInfo{val: v, cred: v, pos: -1, end: -1} }

// static reports whether the word's value is known and equal to v.
func (w *wordInfo) is(v string) bool { return !w.dyn && w.val == v }

// source returns the text of a node in src, or "" when offsets do not fit.
func source(src string, n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(src) || s > e {
		return ""
	}
	return src[s:e]
}

// elided returns the text of an expansion for a word's credential form,
// its middle dropped past 256 bytes: the word around a substitution holds
// the substitution's text, so copying all of it for every word would cost
// the square of the depth of nested substitutions. Only its ends can make
// the word look like a credential path ($(..)/.netrc).
func elided(s string) string {
	if len(s) <= 256 {
		return s
	}
	return s[:128] + ".." + s[len(s)-126:]
}

// wordOf computes what is statically known about w.
func wordOf(w *syntax.Word, src string) wordInfo {
	wi := wordInfo{pos: int(w.Pos().Offset()), end: int(w.End().Offset())}
	var val strings.Builder
	var br braceScan
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			unquotedLit(p.Value, &val, &wi, &br)
		case *syntax.SglQuoted:
			if p.Dollar {
				wi.ansi = true
				if strings.IndexByte(p.Value, '\\') >= 0 {
					// $'\x72m' is "rm": rather than decode every escape,
					// treat escapes as unknown.
					wi.dyn = true
				}
			}
			val.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				wi.ansi = true
				wi.dyn = true // $"..": locale translation
			}
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					dquotedLit(q.Value, &val)
				case *syntax.ParamExp:
					wi.dyn = true
					paramCred(q, &val)
				default:
					wi.dyn = true
					val.WriteString(elided(source(src, q)))
				}
			}
		case *syntax.ParamExp:
			wi.dyn, wi.split = true, true
			paramCred(p, &val)
		case *syntax.ProcSubst:
			wi.dyn = true
			wi.pipe = len(w.Parts) == 1 && p.Op == syntax.CmdIn
			val.WriteString(elided(source(src, p)))
		case *syntax.ExtGlob:
			wi.glob = true
			if val.Len() == 0 {
				wi.lead = true
			}
			val.WriteString(elided(source(src, p)))
		default: // CmdSubst, ArithmExp, BraceExp
			wi.dyn, wi.split = true, true
			val.WriteString(elided(source(src, p)))
		}
		if br.found {
			wi.brace = true
		}
	}
	wi.cred = val.String()
	if wi.dyn {
		wi.val = source(src, w)
	} else {
		wi.val = wi.cred
	}
	return wi
}

// paramCred renders a parameter expansion for credential checks: $HOME and
// ${HOME} become "$HOME" so that $HOME/.netrc is recognized.
func paramCred(p *syntax.ParamExp, b *strings.Builder) {
	if p.Param != nil && simpleParam(p) {
		b.WriteString("$" + p.Param.Value)
		return
	}
	b.WriteString("$?")
}

// braceScan tracks unquoted braces across a word's parts to spot brace
// expansion, which turns one word into several.
type braceScan struct {
	open  int  // unquoted '{' seen and not closed
	sep   bool // unquoted ',' or ".." seen inside an open brace
	found bool
	dot   bool // previous unquoted char was '.'
}

// unquotedLit appends the value of an unquoted literal, removing backslash
// escapes, and notes glob metacharacters and brace expansion. A glob with
// no static text before it (*, ”*) may expand to a name starting with '-'.
func unquotedLit(s string, b *strings.Builder, wi *wordInfo, br *braceScan) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			i++
			if i < len(s) {
				b.WriteByte(s[i])
			} else {
				b.WriteByte('\\') // a backslash ending the line is literal
			}
			br.dot = false
			continue
		}
		switch c {
		case '*', '?', '[':
			wi.glob = true
			if b.Len() == 0 {
				wi.lead = true
			}
		case '{':
			br.open++
		case '}':
			if br.open > 0 {
				if br.sep {
					br.found = true
				}
				br.open--
			}
		case ',':
			if br.open > 0 {
				br.sep = true
			}
		case '.':
			if br.open > 0 && br.dot {
				br.sep = true
			}
		}
		br.dot = c == '.'
		b.WriteByte(c)
	}
}

// dquotedLit appends the value of a literal inside double quotes, where a
// backslash only escapes $, `, ", \ and newline.
func dquotedLit(s string, b *strings.Builder) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
				b.WriteByte(s[i])
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
}

// simpleParam reports whether p only reads a variable, without an operation
// that runs code, assigns, or evaluates arithmetic: $x, ${x}, ${#x},
// ${x:-word}, ${x#pat}, ${x^^}. ${!x}, ${x@P}, ${x[i]}, ${x:1:2} and
// ${x:=v} are not simple: indirection and subscripts evaluate arithmetic,
// which can run command substitutions hidden in a variable's value, and @P
// expands the value as a prompt.
func simpleParam(p *syntax.ParamExp) bool {
	if p.Param == nil || p.Flags != nil || p.Excl || p.Width || p.IsSet ||
		p.Split != syntax.OptUnset || p.GlobSubst != syntax.OptUnset || p.RcExpand != syntax.OptUnset ||
		p.NestedParam != nil || p.Index != nil || len(p.Modifiers) > 0 || p.Slice != nil ||
		p.Repl != nil || p.Names != 0 {
		return false
	}
	if p.Exp == nil {
		return true
	}
	if p.Length {
		return false
	}
	switch p.Exp.Op {
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull,
		syntax.DefaultUnset, syntax.DefaultUnsetOrNull,
		syntax.RemSmallSuffix, syntax.RemLargeSuffix,
		syntax.RemSmallPrefix, syntax.RemLargePrefix,
		syntax.UpperFirst, syntax.UpperAll, syntax.LowerFirst, syntax.LowerAll:
		return true
	}
	return false
}

// paramReason explains why a parameter expansion is not allowed.
func paramReason(p *syntax.ParamExp) string {
	switch {
	case p.Excl:
		return "indirect expansion ${!..} may evaluate code"
	case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps:
		return "${..@..} operator (e.g. @P) may run code"
	case p.Exp != nil && (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull):
		return "${..=..} assigns a variable"
	case p.Index != nil || p.Slice != nil:
		return "subscript or slice evaluates arithmetic"
	}
	return "complex parameter expansion"
}

// isName reports whether s is a valid shell variable name.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// isAssignment reports whether s looks like NAME=value.
func isAssignment(s string) bool {
	i := strings.IndexByte(s, '=')
	return i > 0 && isName(s[:i])
}

// hasGlobMeta reports whether s contains a glob metacharacter.
func hasGlobMeta(s string) bool { return strings.ContainsAny(s, "*?[") }
