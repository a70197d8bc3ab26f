package shell

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// agree fails the analysis when bash may read src otherwise than the
// parser did.
func (a *analyzer) agree(src string, f *syntax.File) {
	if why := disagreement(src, f); why != "" {
		a.fail(why)
	}
}

// disagreement reports why bash and the parser may read src differently, or
// "" when src keeps to shapes where toolgate has checked that they agree.
// It is an allowlist of shapes, not a list of known tricks: a script whose
// reading by bash is not certain is never read-only. bashdiff_test.go runs
// the read-only lines through bash to keep it honest.
func disagreement(src string, f *syntax.File) string {
	if why := oddBytes(src); why != "" {
		return why
	}
	if strings.Contains(src, "\\\n") {
		if why := continuations(src); why != "" {
			return why
		}
	}
	t := treeCheck{src: src}
	syntax.Walk(f, t.visit)
	if t.why != "" || !t.hdocs {
		return t.why
	}
	syntax.Walk(f, t.collect)
	return t.heredocs()
}

// oddBytes refuses bytes whose reading depends on the reader. bash splits
// words on space, tab and newline only: the parser reads \r as a blank too,
// a NUL ends the string bash is given, invalid UTF-8 is decoded differently
// by a multibyte locale, and other controls, Unicode spaces and format
// characters (NBSP, zero-width, bidi controls) are word characters to both
// but look like blanks or hide text from whoever reviews the line.
func oddBytes(src string) string {
	for i, r := range src {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(src[i:], "\uFFFD"):
			return "invalid UTF-8"
		case r < 0x20 && r != '\t' && r != '\n', r == 0x7f:
			return "control character in the command"
		case r >= 0x80 && (unicode.IsSpace(r) || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zs, unicode.Zl, unicode.Zp)):
			return "non-ASCII blank or invisible character in the command"
		}
	}
	return ""
}

// continuations accepts a backslash-newline only as a separator between
// words: after an unescaped blank, outside every word, comment and
// here-document body, where bash and the parser both drop it. Elsewhere they
// part: bash -c 'ls # x \<newline>rm -rf ~' runs rm, because a comment ends
// at the newline in bash while the parser continues the comment's line; in
// here-document delimiters, bodies and terminator lines, quotes and words,
// which of the two joins the lines depends on the quoting. Agents use it
// almost only as "cmd && \<newline>cmd".
func continuations(src string) string {
	const why = "backslash-newline inside a word, comment or here-document: bash and the parser may join the lines differently"
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
	if err != nil {
		return why
	}
	// inside[i] > 0 says a word or comment holds byte i: a difference
	// array, summed below, so that the cost is the line's length and the
	// nodes', not their product.
	inside := make([]int32, len(src)+1)
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.Word, *syntax.Comment:
			if s, e := off(n.Pos()), off(n.End()); 0 <= s && s < e && e <= len(src) {
				inside[s]++
				inside[e]--
			}
		}
		return true
	})
	for i := 1; i < len(inside); i++ {
		inside[i] += inside[i-1]
	}
	for i := 0; ; {
		j := strings.Index(src[i:], "\\\n")
		if j < 0 {
			return ""
		}
		p := i + j
		if p == 0 || src[p-1] != ' ' && src[p-1] != '\t' || p >= 2 && src[p-2] == '\\' {
			return why
		}
		if inside[p] > 0 || inside[p-1] > 0 {
			return why
		}
		i = p + 2
	}
}

// hdoc is one here-document the parser found.
type hdoc struct {
	r            *syntax.Redirect
	op, wordEnd  int
	inBackquote  bool // inside `..`
	inHdoc       bool // inside another here-document's body
	inSubst      bool // inside $(..) or <(..)
	substL       int  // that substitution's bounds
	substR       int
	lineNL       int // the newline that ends the operator's line
	bodyStart    int // where bash starts reading the body
	termEnd      int // end of the terminator line, before its newline
	delim        string
	quoted, dash bool
}

// span is one node's extent and what it belongs to.
type span struct {
	pos, end int
	owner    *syntax.Redirect // here-document whose body holds the node
	hdocOp   bool             // the here-document redirection itself
}

// treeCheck walks the parsed tree for shapes that bash reads otherwise.
type treeCheck struct {
	src    string
	why    string
	bqEnds map[int]bool // where the backquoted substitutions seen so far end
	hdocs  bool
	// The second walk, over lines with here-documents only.
	stack []frame
	docs  []*hdoc
	spans []span
}

// frame is what a node's children inherit from their ancestors.
type frame struct {
	node  syntax.Node
	owner *syntax.Redirect // here-document whose body holds the node
	inBq  bool
	subst bool
	l, r  int
}

func (t *treeCheck) fail(why string) {
	if t.why == "" {
		t.why = why
	}
}

// visit checks one node's own shape.
func (t *treeCheck) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.CallExpr:
		for _, as := range n.Assigns {
			t.wordEnds(as.Value)
		}
		for _, w := range n.Args {
			t.wordEnds(w)
		}
	case *syntax.Redirect:
		t.wordEnds(n.Word)
		t.hdocs = t.hdocs || n.Op == syntax.Hdoc || n.Op == syntax.DashHdoc
	case *syntax.CmdSubst:
		switch {
		case n.Backquotes && strings.Contains(t.text(n), `\`):
			// bash reads `..` twice: first it drops the backslashes
			// before $, ` and \ (and " inside "..."), then it parses
			// what is left; nested `..` need exactly that.
			t.fail("backslash inside `..`: bash unescapes it before parsing")
		case n.Backquotes:
			if t.bqEnds == nil {
				t.bqEnds = map[int]bool{}
			}
			t.bqEnds[off(n.Right)] = true
		case t.at(off(n.Left)+2) == '(':
			t.fail("$((: bash reads it as arithmetic or as a subshell by trial")
		}
	case *syntax.ProcSubst:
		if t.at(off(n.OpPos)+2) == '(' {
			t.fail("<((: bash reads it as arithmetic or as a subshell by trial")
		}
	case *syntax.Subshell:
		if t.at(off(n.Lparen)+1) == '(' {
			t.fail("((: bash reads it as arithmetic or as nested subshells by trial")
		}
	case *syntax.ArithmExp:
		// bash finds the end of $((..)) by counting parentheses in the raw
		// text; with quotes, $ or ` inside, that count and the parser's
		// may end in different places.
		if !plainArith(t.text(n)) {
			t.fail("arithmetic expansion with quotes, substitutions or escapes")
		}
	}
	return t.why == ""
}

// collect records every node's extent and every here-document with what
// surrounds it.
func (t *treeCheck) collect(n syntax.Node) bool {
	if n == nil {
		t.stack = t.stack[:len(t.stack)-1]
		return true
	}
	var c frame
	if len(t.stack) > 0 {
		c = t.stack[len(t.stack)-1]
		if rd, ok := c.node.(*syntax.Redirect); ok && rd.Hdoc != nil && n == syntax.Node(rd.Hdoc) {
			c.owner = rd
		}
	}
	rd, _ := n.(*syntax.Redirect)
	isDoc := rd != nil && (rd.Op == syntax.Hdoc || rd.Op == syntax.DashHdoc)
	if isDoc {
		t.docs = append(t.docs, &hdoc{r: rd, op: off(rd.OpPos), wordEnd: off(rd.Word.End()),
			inBackquote: c.inBq, inHdoc: c.owner != nil, inSubst: c.subst, substL: c.l, substR: c.r,
			dash: rd.Op == syntax.DashHdoc})
	}
	if n.Pos().IsValid() && n.End().IsValid() {
		t.spans = append(t.spans, span{pos: off(n.Pos()), end: off(n.End()), owner: c.owner, hdocOp: isDoc})
	}
	c.node = n
	switch n := n.(type) {
	case *syntax.CmdSubst:
		c.inBq = c.inBq || n.Backquotes
		c.subst, c.l, c.r = true, off(n.Left), off(n.Right)
	case *syntax.ProcSubst:
		c.subst, c.l, c.r = true, off(n.OpPos), off(n.Rparen)
	}
	t.stack = append(t.stack, c)
	return true
}

// wordEnds checks that the parser ends w where bash ends a word: at a
// blank, a newline, an operator character, a closing backquote or the end
// of the source. The parser ends a here-document delimiter before a '#'
// (cat <<'EOF'#x), where bash reads on: the delimiter is then EOF#x, and
// the lines the parser takes for the body run as commands.
func (t *treeCheck) wordEnds(w *syntax.Word) {
	if w == nil || !w.End().IsValid() {
		return
	}
	e := off(w.End())
	switch c := t.at(e); {
	case e >= len(t.src), strings.IndexByte(" \t\n;&|<>()", c) >= 0:
	case c == '`' && t.bqEnds[e]:
	default:
		t.fail("the parser ends a word where bash does not")
	}
}

// plainArith reports arithmetic text made only of names, numbers,
// operators, blanks and parentheses.
func plainArith(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "$(("), "$[")
	s = strings.TrimSuffix(strings.TrimSuffix(s, "))"), "]")
	for _, c := range []byte(s) {
		if !isWordByte(c) && !strings.ContainsRune(" \t\n+-*/%<>=!&|^~?:,()", rune(c)) {
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// isDelimByte lists the characters a here-document delimiter may have.
func isDelimByte(c byte) bool { return isWordByte(c) || c == '.' || c == '-' }

func off(p syntax.Pos) int { return int(p.Offset()) }

func (t *treeCheck) at(i int) byte {
	if i < 0 || i >= len(t.src) {
		return 0
	}
	return t.src[i]
}

func (t *treeCheck) text(n syntax.Node) string {
	p, e := off(n.Pos()), off(n.End())
	if !n.Pos().IsValid() || !n.End().IsValid() || p > e || e > len(t.src) {
		return ""
	}
	return t.src[p:e]
}

// delimiter accepts a plain word of [A-Za-z0-9_.-], bare or wholly inside
// '..' or "..": bash strips quotes, backslashes and $'..' from a delimiter
// by rules the parser follows only in part, and decides from the quoting
// whether the body is expanded.
func delimiter(w string) (delim string, quoted, ok bool) {
	if len(w) >= 2 && (w[0] == '\'' || w[0] == '"') && w[len(w)-1] == w[0] {
		w, quoted = w[1:len(w)-1], true
	}
	if w == "" {
		return "", false, false
	}
	for i := 0; i < len(w); i++ {
		if !isDelimByte(w[i]) {
			return "", false, false
		}
	}
	return w, quoted, true
}

// heredocs checks that every here-document's body is exactly what bash
// reads: bash starts the bodies of a line's here-documents, in order, after
// the newline that ends the line, and ends each at the first line equal to
// the delimiter (after leading tabs with <<-, nothing else stripped). The
// parser must agree on where each body starts and ends, and no other part
// of its tree may lie inside one: otherwise a line that bash runs may be
// body text to the parser (cat <<EOF with $(echo ' spanning the
// terminator), or the other way round.
func (t *treeCheck) heredocs() string {
	// The tree lists a statement's redirections after its command; bash
	// reads the operators in source order.
	sort.SliceStable(t.docs, func(i, j int) bool { return t.docs[i].op < t.docs[j].op })
	lineNL, prevEnd := -1, 0
	for _, d := range t.docs {
		switch {
		case d.inBackquote:
			return "here-document inside `..`"
		case d.inHdoc:
			return "here-document inside a here-document"
		}
		var ok bool
		if d.delim, d.quoted, ok = delimiter(t.text(d.r.Word)); !ok {
			return "here-document delimiter is not a plain word"
		}
		nl := d.wordEnd
		for ; nl < len(t.src); nl++ {
			// Past continuations, which are all between words here.
			if t.src[nl] == '\n' && t.src[nl-1] != '\\' {
				break
			}
		}
		if nl >= len(t.src) {
			return "here-document without a body"
		}
		switch {
		case nl == lineNL:
			// The next body on the same line follows the previous
			// terminator line.
			if prevEnd >= len(t.src) {
				return "here-document without a body"
			}
			d.bodyStart = prevEnd + 1
		case nl < prevEnd:
			return "here-document operator inside another here-document's body"
		default:
			d.bodyStart = nl + 1
		}
		lineNL, d.lineNL = nl, nl
		term := -1
		for i := d.bodyStart; i <= len(t.src); {
			j := strings.IndexByte(t.src[i:], '\n')
			if j < 0 {
				j = len(t.src)
			} else {
				j += i
			}
			line := t.src[i:j]
			if d.dash {
				line = strings.TrimLeft(line, "\t")
			}
			if line == d.delim {
				term = j
				break
			}
			i = j + 1
		}
		if term < 0 {
			return "here-document " + d.delim + " has no terminator line"
		}
		d.termEnd, prevEnd = term, term
		if d.inSubst && (d.bodyStart <= d.substL || d.termEnd >= d.substR) {
			return "here-document body outside its substitution"
		}
		if why := t.bodyAgrees(d); why != "" {
			return why
		}
	}
	for _, d := range t.docs {
		for _, s := range t.spans {
			if s.hdocOp || s.owner != nil || s.end <= d.bodyStart || s.pos >= d.termEnd || t.encloses(s, d) {
				// The here-documents themselves, their bodies (checked
				// by bodyAgrees), nodes outside the body, and nodes that
				// hold a whole here-document of the line.
				continue
			}
			return "the parser reads part of here-document " + d.delim + "'s body as commands"
		}
	}
	return ""
}

// encloses reports whether s holds the operator and the whole body of d or
// of a later here-document of d's line, as the statement, list or
// substitution around a here-document does.
func (t *treeCheck) encloses(s span, d *hdoc) bool {
	for _, e := range t.docs {
		if e.lineNL == d.lineNL && e.termEnd >= d.termEnd && s.pos <= e.op && s.end >= e.termEnd {
			return true
		}
	}
	return false
}

// bodyAgrees checks the parser's body of d against bash's.
func (t *treeCheck) bodyAgrees(d *hdoc) string {
	body := d.r.Hdoc
	termStart := d.termEnd - len(d.delim)
	if body == nil {
		if termStart != d.bodyStart && !(d.dash && strings.Trim(t.src[d.bodyStart:termStart], "\t") == "") {
			return "here-document " + d.delim + ": the parser found no body"
		}
		return ""
	}
	if off(body.Pos()) != d.bodyStart || off(body.End()) != d.termEnd {
		return "here-document " + d.delim + ": the parser's body ends elsewhere"
	}
	if d.quoted {
		// A quoted body is one literal: the source text itself.
		lit, ok := body.Lit(), len(body.Parts) == 1
		if !ok || lit != t.src[d.bodyStart:termStart] {
			return "here-document " + d.delim + ": the parser's body differs"
		}
		return ""
	}
	for _, s := range t.spans {
		if s.owner == d.r && (s.pos < d.bodyStart || s.end > d.termEnd) {
			return "here-document " + d.delim + ": an expansion in the body runs past its terminator"
		}
	}
	return ""
}
