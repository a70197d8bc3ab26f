package shell

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bounds on the work one analysis does, so that no command line can crash,
// stall or bloat the server, whatever the size the server accepts. A line
// past a bound is not read-only and is analysed no further: ParseErr holds
// a *LimitError, so that rules treat it as a line that did not parse (deny
// and ask rules see its pieces, allow rules never match it).
const (
	// maxNesting bounds how deeply the constructs of a line nest, counted
	// by scanNesting before the line is parsed: mvdan.cc/sh recurses for
	// each level, and a goroutine that outgrows Go's stack limit (1 GB on
	// 64-bit) dies with a fatal error no recover catches. The parser
	// overflows it at about 142,000 levels of $((((..)))), whose levels
	// cost about 3.7 KB of stack each (the other constructs cost 0.1 to
	// 2.2 KB a level); 100 levels cost well under a megabyte of stack,
	// whatever the analysis adds, and no command an agent writes nests
	// 20 deep.
	maxNesting = 100
	// maxTreeDepth bounds the depth of the parsed tree, which the analysis
	// walks recursively. Chains of && || | and of left-associative
	// arithmetic operators are built by the parser without recursion but
	// nest one level per operator (two nodes per command of a chain).
	maxTreeDepth = 1000
	// maxWords bounds the words of a line and of its bash -c payloads
	// together, counted before parsing each: the parse, the analysis, the rules and the
	// reads' checks cost up to about 1.5 KB and 2 µs per word (cat f f f
	// .., each a path to resolve and match). Commands agents write have
	// at most a few thousand words; their long inputs are here-documents
	// and quoted strings, which are one word each.
	maxWords = 10_000
	// maxFlat is the length of the chains the parser builds in loops
	// (&& || | lists, elif, left-associative arithmetic) past which
	// parseBounded measures the parsed tree's depth.
	maxFlat = 64
	// maxHeredocs bounds the here-documents of a line: agree.go matches
	// each of them against every node of the tree.
	maxHeredocs = 32
	// maxTextSlack is the room for command text beyond four times the
	// line's length (see analyzer.textLeft): the text of a command holds
	// the text of the substitutions in its words, which the rules copy and
	// match once per command.
	maxTextSlack = 64 << 10
)

// LimitError is Analysis.ParseErr for a line that exceeds one of the
// bounds on the analysis's work, or whose analysis was cancelled.
type LimitError struct {
	// Reason says which bound, e.g. "nesting deeper than 100 levels".
	Reason string
	// Err is the context's error when the analysis was cancelled.
	Err error
}

func (e *LimitError) Error() string { return e.Reason }

// Unwrap returns Err.
func (e *LimitError) Unwrap() error { return e.Err }

// parseBounded parses src as bash after checking, without recursion, that
// its nesting and size stay within the bounds above; src's words are taken
// from *words, what is left of maxWords for the line. The caller must call
// release when done with the tree (when err is nil or a parse error).
func parseBounded(src string, words *int) (f *syntax.File, release func(), err error) {
	s := nestScan{src: src, wordsLeft: *words, stack: make([]nestFrame, 0, 4)}
	why := s.scan()
	*words -= s.words
	if why != "" {
		return nil, func() {}, &LimitError{Reason: why}
	}
	f, release, err = parse(src)
	if err != nil {
		return f, release, err
	}
	// The tree is as deep as the levels counted and the chains built in
	// loops (a few nodes each); only long chains, or a line the scan
	// could not follow, need a look.
	if (s.flat > maxFlat || s.rough) && !treeWithin(f, maxTreeDepth) {
		release()
		return nil, func() {}, &LimitError{Reason: fmt.Sprintf("nested deeper than %d levels once parsed (commands chained with && || | count one level each)", maxTreeDepth/2)}
	}
	return f, release, nil
}

// treeWithin reports whether the tree is at most max nodes deep. The walk
// itself never goes deeper than max.
func treeWithin(f *syntax.File, max int) bool {
	w := depthWalk{max: max, ok: true}
	syntax.Walk(f, w.visit)
	return w.ok
}

type depthWalk struct {
	depth, max int
	ok         bool
}

func (w *depthWalk) visit(n syntax.Node) bool {
	switch {
	case n == nil:
		w.depth--
		return true
	case w.depth >= w.max:
		w.ok = false
		return false
	}
	w.depth++
	return w.ok
}

// scanNesting bounds, in one pass over the bytes and without recursion,
// how deeply the parser will recurse on src, and how many words and
// here-documents src has. It returns why src exceeds a bound, or "".
//
// It follows the parser's lexing closely enough to tell code from quoted
// text and here-document bodies, and errs one way only: it counts every
// construct that may open a level (every bracket-like token, compound
// command keywords wherever a command may start, the operators that make
// the parser recurse without brackets: unary, ternary, power and
// assignment chains in arithmetic, ! && || in [[ ]], time and function
// declarations before a command), and closes a level only on a token the
// parser surely reads as that level's end. Wherever it cannot tell how
// the parser reads the line (backslashes or nested backquotes inside
// `..`, here-documents whose bodies expand, let, extended globs, closers
// that do not match), it refuses the line: the count is never below the
// parser's depth. FuzzNesting holds it to that. depth is the deepest
// count reached.
func scanNesting(src string) (depth int, why string) {
	s := nestScan{src: src, wordsLeft: maxWords}
	why = s.scan()
	return s.max, why
}

func (s *nestScan) scan() string {
	if strings.ContainsAny(s.src, "\x00\r") {
		// The parser reads a carriage return as a blank and stops at a
		// NUL: the scan would have to do the same.
		return "cannot bound the nesting before parsing: NUL byte or carriage return"
	}
	s.push(kTop)
	for s.i < len(s.src) && s.why == "" {
		switch s.top().lexMode() {
		case mCmd:
			s.cmdStep()
		case mCase:
			s.caseStep()
		case mDQ:
			s.dqStep()
		case mParam:
			s.paramStep()
		case mArith:
			s.arithStep()
		case mTest:
			s.testStep()
		}
	}
	return s.why
}

// frameKind is a construct open at a point of the scan.
type frameKind uint8

const (
	kTop       frameKind = iota // the line itself
	kSubshell                   // ( .. )
	kCmdSubst                   // $( .. )
	kProcSubst                  // <( .. ) >( .. )
	kFunSub                     // ${ ..; } ${| ..; }
	kBackquote                  // ` .. `
	kBrace                      // { ..; }
	kIf                         // if .. fi
	kLoop                       // while, until, for, select .. done
	kCase                       // case .. esac
	kArray                      // name=( .. )
	kDQ                         // " .. "
	kParam                      // ${ .. }
	kArith                      // $(( .. )) or (( .. ))
	kArithB                     // $[ .. ]
	kParen                      // ( .. ) in arithmetic
	kTest                       // [[ .. ]]
	kTestParen                  // ( .. ) in [[ ]]
	kIndex                      // [ .. ]: soft
	kSoftParen                  // ( .. ) in ${ .. }: soft
)

// Soft frames are counted, but the parser may read their brackets as
// plain characters: a closer of an enclosing construct ends them.
func (k frameKind) soft() bool { return k == kIndex || k == kSoftParen }

// lexMode is how the text inside a frame is read.
type lexMode uint8

const (
	mCmd   lexMode = iota // commands
	mCase                 // a case's subject, in and patterns
	mDQ                   // inside "..", and $".."
	mParam                // inside ${..}
	mArith                // arithmetic
	mTest                 // inside [[ ]]
)

// Where a case frame is.
const (
	caseSubject uint8 = iota // before the subject word
	caseIn                   // after it: in must come
	casePattern              // patterns, up to )
	caseBody                 // the commands of an item
)

// boundary says what a '#' or a word start means at a point of a command.
type boundary uint8

const (
	bNone boundary = iota // inside a word: '#' is a plain character
	bYes                  // between words: '#' starts a comment
)

type nestFrame struct {
	kind   frameKind
	mode   lexMode // a soft frame's reading: its parent's
	serial int     // tells frames apart for here-documents
	// chain counts the levels the parser opens in this frame without
	// brackets: operator chains, time and function declarations.
	chain int
	// flat counts what the parser chains in a loop in this frame's
	// statement or expression (&& || |, elif, binary arithmetic): the
	// tree nests them, the parser does not.
	flat int
	cmd  bool // a kArith opened by (( as a command, not by $((
	// Command position, for frames of commands: possible says a reserved
	// word may open a compound command here (the parser's command
	// position, and more), certain that a reserved word here surely closes
	// one (less than the parser's).
	possible, certain bool
	boundary          boundary
	target            bool // the next word is a redirection's target
	sticky            int  // words after function that may still name a command
	// open is set after && || | and a function's name: a newline there
	// does not end the statement (the parser skips it).
	open      bool
	caseState uint8
	patStart  bool // at the start of a case item's patterns
}

func (f *nestFrame) lexMode() lexMode {
	switch f.kind {
	case kCase:
		if f.caseState == caseBody {
			return mCmd
		}
		return mCase
	case kDQ:
		return mDQ
	case kParam:
		return mParam
	case kArith, kArithB, kParen:
		return mArith
	case kTest, kTestParen:
		return mTest
	case kIndex, kSoftParen:
		return f.mode
	}
	return mCmd
}

// pendingDoc is a here-document whose body comes after the next newline.
type pendingDoc struct {
	delim        string
	quoted, dash bool
	serial       int // the frame of its operator
}

type nestScan struct {
	src    string
	i      int
	stack  []nestFrame
	depth  int // levels open: frames but the top one, plus their chains
	max    int // the deepest depth
	serial int
	bq     int // open backquotes
	words  int
	// wordsLeft is what remains of maxWords for the line.
	wordsLeft int
	docs      int
	hdocs     []pendingDoc
	why       string
	// flat is the longest chain a frame's flat counted; rough is set
	// when roughLevels let the rest of the line through unread.
	flat  int
	rough bool
}

// flatten counts one more link of a chain the parser builds in a loop.
func (s *nestScan) flatten(f *nestFrame) {
	f.flat++
	s.flat = max(s.flat, f.flat)
}

func (s *nestScan) fail(format string, args ...any) {
	if s.why == "" {
		if len(args) > 0 {
			format = fmt.Sprintf(format, args...)
		}
		s.why = format
	}
	s.i = len(s.src)
}

// unsure is called where the scan cannot follow how the parser reads the
// line. The parser may still read it when what is left is short of
// the bounds by a count that needs no reading: its every byte that can
// open a level, and every word that can (see roughLevels). Otherwise the
// line is refused.
func (s *nestScan) unsure(what string) {
	if s.why != "" {
		return
	}
	rest := s.src[s.i:]
	levels, words := roughLevels(rest)
	if d := s.depth + levels; d <= maxNesting && s.words+words <= s.wordsLeft && s.docs+strings.Count(rest, "<<") <= maxHeredocs {
		s.words += words
		s.rough = true
		s.max = max(s.max, d)
		s.i = len(s.src)
		return
	}
	s.fail("cannot bound the nesting before parsing: " + what)
}

// roughLevels bounds, without reading it, the levels the parser may open in
// src, and its words: each level starts at one of the bytes ( [ { ` "
// or at an operator of a chain (? = ! ~ - + * & |), or is a compound
// command's reserved word or a prefix word (searched as plain substrings,
// line continuations removed); words are separated by blanks.
func roughLevels(src string) (levels, words int) {
	src = strings.ReplaceAll(src, "\\\n", "")
	inWord := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if strings.IndexByte("([{`\"?=!~-+*&|", c) >= 0 {
			levels++
		}
		blank := c == ' ' || c == '\t' || c == '\n'
		if !blank && !inWord {
			words++
		}
		inWord = !blank
	}
	for _, kw := range []string{"if", "while", "until", "for", "select", "case", "function", "time", "coproc", "let"} {
		levels += strings.Count(src, kw)
	}
	return levels, words
}

func (s *nestScan) top() *nestFrame { return &s.stack[len(s.stack)-1] }

// hard returns the innermost frame that is not soft.
func (s *nestScan) hard() *nestFrame {
	for i := len(s.stack) - 1; i > 0; i-- {
		if !s.stack[i].kind.soft() {
			return &s.stack[i]
		}
	}
	return &s.stack[0]
}

func (s *nestScan) push(k frameKind) *nestFrame {
	mode := mCmd
	if len(s.stack) > 0 {
		mode = s.top().lexMode()
		s.hard().open = false
	}
	s.serial++
	s.stack = append(s.stack, nestFrame{kind: k, mode: mode, serial: s.serial, possible: true, certain: true, boundary: bYes})
	if len(s.stack) > 1 {
		s.addDepth(1)
	}
	if k == kBackquote {
		s.bq++
	}
	return s.top()
}

func (s *nestScan) pop() frameKind {
	f := s.top()
	k := f.kind
	s.depth -= 1 + f.chain
	if k == kBackquote {
		s.bq--
	}
	s.stack = s.stack[:len(s.stack)-1]
	return k
}

// discardSoft ends the soft frames on top of the stack.
func (s *nestScan) discardSoft() {
	for len(s.stack) > 1 && s.top().kind.soft() {
		s.pop()
	}
}

func (s *nestScan) addDepth(n int) {
	s.depth += n
	s.max = max(s.max, s.depth)
	if s.depth > maxNesting {
		s.fail("nesting deeper than %d levels", maxNesting)
	}
}

func (s *nestScan) chain(f *nestFrame) {
	f.chain++
	s.addDepth(1)
}

// word counts a word.
func (s *nestScan) word() {
	if s.words++; s.words > s.wordsLeft {
		s.fail("more than %d words", maxWords)
	}
}

func (s *nestScan) at(i int) byte {
	if i < 0 || i >= len(s.src) {
		return 0
	}
	return s.src[i]
}

// wordEnd reports the bytes that end a word outside quotes.
func wordEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')':
		return true
	}
	return false
}

// chainOp reports the bytes of arithmetic operators that make the parser
// recurse without brackets (unary - + ! ~, ?:, **, = and op=), and some
// others: counting more only refuses more.
func chainOp(c byte) bool { return strings.IndexByte("?=!~-+*", c) >= 0 }

// ---- commands

func (s *nestScan) cmdStep() {
	f := s.hard()
	c := s.src[s.i]
	switch c {
	case ' ', '\t':
		s.i++
		f.boundary = bYes
		return
	case '\n':
		s.i++
		s.newline(f)
		return
	case ';', '&', '|', '<', '>', '(', ')':
		s.operator(f, c)
		return
	case '\\':
		if s.at(s.i+1) == '\n' {
			// The parser drops a backslash-newline; between words it
			// only joins lines.
			if f.boundary == bNone || s.bq > 0 {
				s.unsure("backslash-newline inside a word")
				return
			}
			s.i += 2
			return
		}
	}
	if f.boundary != bNone {
		if c == '#' {
			s.comment()
			return
		}
		f.boundary, f.open = bNone, false
		s.word()
		if s.wordStart(f) {
			return
		}
	}
	s.wordChar(c)
}

// wordStart handles the start of a word in a frame of commands: a plain
// word (no quotes, expansions or backslashes) is read whole, and may be a
// reserved word; other words are read byte by byte. It reports whether it
// read the word.
func (s *nestScan) wordStart(f *nestFrame) bool {
	j := s.i
	for j < len(s.src) && !wordEnd(s.src[j]) && strings.IndexByte("'\"`$\\", s.src[j]) < 0 {
		j++
	}
	plain := j == len(s.src) || wordEnd(s.src[j])
	w := s.src[s.i:j]
	switch {
	case f.target:
		f.target = false
	case f.kind == kArray, s.top().kind == kIndex:
		// No reserved words in an array or a subscript, whose
		// operators plainWord and wordChar count.
	case plain && s.keyword(f, w):
		return true
	default:
		s.wordFlags(f, w)
	}
	if plain {
		s.plainWord(w)
		return true
	}
	return false
}

// wordFlags updates the command position after a word that is not a
// reserved word, given its plain prefix.
func (s *nestScan) wordFlags(f *nestFrame, prefix string) {
	switch {
	case assignmentPrefix(prefix):
		// Assignments come before the command: a reserved word after
		// one is a plain word to the parser, but counting it costs
		// nothing.
		f.certain = false
	case f.sticky > 0:
		f.sticky--
		f.possible, f.certain = true, false
	default:
		f.possible, f.certain = false, false
	}
}

// assignmentPrefix reports whether a word starts like NAME=, NAME+= or
// NAME[.
func assignmentPrefix(w string) bool {
	i := 0
	for i < len(w) && (w[i] == '_' || w[i] >= 'a' && w[i] <= 'z' || w[i] >= 'A' && w[i] <= 'Z' || i > 0 && w[i] >= '0' && w[i] <= '9') {
		i++
	}
	if i == 0 || i == len(w) {
		return false
	}
	return w[i] == '=' || w[i] == '[' || w[i] == '+' && i+1 < len(w) && w[i+1] == '='
}

// keyword handles a plain word that may be a reserved word, and reports
// whether it read it.
func (s *nestScan) keyword(f *nestFrame, w string) bool {
	switch w {
	case "if", "while", "until", "for", "select", "case", "{", "[[":
		if !f.possible {
			return false
		}
		s.i += len(w)
		switch w {
		case "if":
			s.push(kIf)
		case "while", "until":
			s.push(kLoop)
		case "for", "select":
			nf := s.push(kLoop)
			nf.possible, nf.certain = false, false
		case "case":
			s.push(kCase).caseState = caseSubject
		case "{":
			s.push(kBrace)
		case "[[":
			s.push(kTest)
		}
		return true
	case "then", "do", "else", "elif", "!", "time":
		// Wherever the parser may read them as reserved words (for x do
		// needs no separator before do), a command may follow.
		s.i += len(w)
		if w == "elif" {
			s.flatten(f) // elif clauses nest in the tree
		}
		if w == "time" && f.possible {
			s.chain(f) // time runs a pipeline it parses recursively
		}
		f.possible = true
		return true
	case "fi", "done", "esac", "}":
		if !f.certain {
			return false
		}
		s.i += len(w)
		s.closeWord(w)
		return true
	case "function":
		if !f.possible {
			return false
		}
		s.i += len(w)
		s.chain(f)
		f.possible, f.certain, f.sticky, f.open = true, false, 1, true
		return true
	case "let", "coproc":
		if f.possible {
			// Where let's arithmetic ends, and what coproc runs, the
			// scan does not follow.
			s.unsure(w)
			return true
		}
	}
	return false
}

// closeWord ends the compound command a reserved word closes.
func (s *nestScan) closeWord(w string) {
	s.discardSoft()
	t := s.top()
	ok := false
	switch w {
	case "fi":
		ok = t.kind == kIf
	case "done":
		ok = t.kind == kLoop
	case "esac":
		ok = t.kind == kCase && t.caseState == caseBody
	case "}":
		ok = t.kind == kBrace || t.kind == kFunSub
	}
	if !ok {
		s.unsure(w + " that closes nothing the scan has open")
		return
	}
	if s.pop() == kFunSub {
		s.hard().boundary = bNone // ${ ..; } is part of a word
		return
	}
	s.compoundEnd()
}

// compoundEnd sets the command position after a compound command: a
// reserved word may close the enclosing one, and the parser may read one
// as the start of another (counting it costs nothing).
func (s *nestScan) compoundEnd() {
	p := s.hard()
	p.possible, p.certain, p.boundary = true, true, bYes
}

// plainWord reads a plain word: brackets of subscripts and globs, and the
// operators inside them.
func (s *nestScan) plainWord(w string) {
	if s.top().kind != kIndex && strings.IndexByte(w, '[') < 0 {
		s.i += len(w) // nothing in it opens or closes a level
		return
	}
	for k := 0; k < len(w); k++ {
		if s.plainByte(w[k]); s.why != "" {
			return // fail moved to the end
		}
	}
	s.i += len(w)
}

func (s *nestScan) plainByte(c byte) {
	switch c {
	case '[':
		s.push(kIndex)
	case ']':
		if s.top().kind == kIndex {
			s.pop()
		}
	default:
		if t := s.top(); t.kind == kIndex && chainOp(c) {
			s.chain(t)
		}
	}
}

// wordChar reads one byte (or quoted string, or the start of an
// expansion) inside a word.
func (s *nestScan) wordChar(c byte) {
	switch c {
	case '\'':
		s.squote()
	case '"':
		s.i++
		s.push(kDQ)
	case '$':
		s.dollar(false)
	case '`':
		s.backquote()
	case '\\':
		s.escape()
	default:
		s.i++
		s.plainByte(c)
	}
}

func (s *nestScan) escape() {
	switch {
	case s.bq > 0:
		s.unsure("backslash inside `..`")
	case s.at(s.i+1) == '\n':
		s.i += 2
	default:
		s.i = min(s.i+2, len(s.src))
	}
}

func (s *nestScan) squote() {
	j := strings.IndexByte(s.src[s.i+1:], '\'')
	if j < 0 {
		s.i = len(s.src) // unterminated: the parser stops there
		return
	}
	if s.bq > 0 && strings.IndexByte(s.src[s.i+1:s.i+1+j], '`') >= 0 {
		s.unsure("backquote in a quoted string inside `..`")
		return
	}
	s.i += j + 2
}

// ansi skips a $'..' string.
func (s *nestScan) ansi() {
	k := s.i + 2
	for k < len(s.src) {
		switch s.src[k] {
		case '\\':
			if s.bq > 0 {
				s.unsure("backslash inside `..`")
				return
			}
			k += 2
			continue
		case '\'':
			s.i = k + 1
			return
		case '`':
			if s.bq > 0 {
				s.unsure("backquote in a quoted string inside `..`")
				return
			}
		}
		k++
	}
	s.i = len(s.src)
}

// dollar reads an expansion starting at '$'.
func (s *nestScan) dollar(inDQ bool) {
	switch c := s.at(s.i + 1); c {
	case '(':
		if s.at(s.i+2) == '(' {
			s.i += 3
			s.push(kArith)
			return
		}
		s.i += 2
		s.push(kCmdSubst)
	case '{':
		s.i += 2
		if strings.IndexByte(" \t\n|", s.at(s.i)) >= 0 && s.i < len(s.src) {
			s.push(kFunSub)
			return
		}
		s.push(kParam)
	case '[':
		s.i += 2
		s.push(kArithB)
	case '\'':
		if inDQ {
			s.i++
			return
		}
		s.ansi()
	case '"':
		if inDQ {
			s.i++
			return
		}
		s.i += 2
		s.push(kDQ)
	default:
		if c != 0 && strings.IndexByte("#?@*!$-0123456789", c) >= 0 {
			s.i += 2 // $# is a parameter, not a comment
			return
		}
		s.i++
	}
}

func (s *nestScan) backquote() {
	if s.top().kind == kBackquote {
		s.i++
		s.pop()
		s.hard().boundary = bNone
		return
	}
	if s.bq > 0 {
		s.unsure("backquote inside `..` that does not end it")
		return
	}
	s.i++
	s.push(kBackquote)
}

func (s *nestScan) comment() {
	if s.bq > 0 {
		s.unsure("comment inside `..`")
		return
	}
	end := len(s.src)
	if j := strings.IndexByte(s.src[s.i:], '\n'); j >= 0 {
		end = s.i + j
		if end > s.i && s.src[end-1] == '\\' {
			s.unsure("comment ending in a backslash") // the parser joins the next line
			return
		}
	}
	s.i = end
}

// separator sets the command position after ; & && || | |& or a newline;
// ; & and newlines end the statement, and its chain, but for a newline
// the parser skips (after && || | or a function's name).
func (s *nestScan) separator(f *nestFrame, end bool) {
	f.possible, f.certain, f.boundary, f.target = true, true, bYes, false
	if end {
		f.sticky, f.flat = 0, 0
		s.depth -= f.chain
		f.chain = 0
	} else {
		s.flatten(f)
	}
	f.open = !end
}

// newlineSeparator is separator for a newline.
func (s *nestScan) newlineSeparator(f *nestFrame) {
	if f.open {
		f.possible, f.boundary, f.target = true, bYes, false
		return
	}
	s.separator(f, true)
}

func (s *nestScan) operator(f *nestFrame, c byte) {
	rest := s.src[s.i:]
	switch c {
	case ';':
		if strings.HasPrefix(rest, ";;") || strings.HasPrefix(rest, ";&") {
			s.i += 2
			if strings.HasPrefix(rest, ";;&") {
				s.i++
			}
			s.discardSoft()
			t := s.top()
			if t.kind != kCase || t.caseState != caseBody {
				s.unsure(";; outside a case")
				return
			}
			s.separator(t, true)
			t.caseState, t.patStart = casePattern, true
			return
		}
		s.i++
		s.separator(f, true)
	case '&':
		switch {
		case strings.HasPrefix(rest, "&&"):
			s.i += 2
			s.separator(f, false)
		case strings.HasPrefix(rest, "&>>"):
			s.i += 3
			s.redirect(f)
		case strings.HasPrefix(rest, "&>"):
			s.i += 2
			s.redirect(f)
		default:
			s.i++
			s.separator(f, true)
		}
	case '|':
		s.i++
		if n := s.at(s.i); n == '|' || n == '&' {
			s.i++
		}
		s.separator(f, false)
	case '<':
		switch {
		case strings.HasPrefix(rest, "<<<"):
			s.i += 3
			s.redirect(f)
		case strings.HasPrefix(rest, "<<-"):
			s.i += 3
			s.heredoc(f, true)
		case strings.HasPrefix(rest, "<<"):
			s.i += 2
			s.heredoc(f, false)
		case strings.HasPrefix(rest, "<("):
			s.procSubst(f)
		case strings.HasPrefix(rest, "<>"), strings.HasPrefix(rest, "<&"):
			s.i += 2
			s.redirect(f)
		default:
			s.i++
			s.redirect(f)
		}
	case '>':
		switch {
		case strings.HasPrefix(rest, ">("):
			s.procSubst(f)
		case strings.HasPrefix(rest, ">>"), strings.HasPrefix(rest, ">&"), strings.HasPrefix(rest, ">|"):
			s.i += 2
			s.redirect(f)
		default:
			s.i++
			s.redirect(f)
		}
	case '(':
		s.openParen(f)
	case ')':
		s.closeParen()
	}
}

func (s *nestScan) redirect(f *nestFrame) {
	f.target, f.boundary = true, bYes
}

func (s *nestScan) procSubst(f *nestFrame) {
	if f.boundary != bNone {
		// A word starts with it.
		s.word()
		if f.target {
			f.target = false
		} else {
			s.wordFlags(f, "")
		}
	}
	f.boundary = bNone
	s.i += 2
	s.push(kProcSubst)
}

func (s *nestScan) openParen(f *nestFrame) {
	// ( ) with only blanks between: a function declaration, whose body
	// the parser reads recursively, as it does the next one's (or an
	// empty array, a=(), counted all the same).
	j := s.i + 1
	for j < len(s.src) && (s.src[j] == ' ' || s.src[j] == '\t') {
		j++
	}
	if s.at(j) == ')' {
		s.i = j + 1
		s.chain(f)
		f.possible, f.certain, f.boundary, f.open = true, false, bYes, true
		return
	}
	if f.boundary == bNone {
		switch prev := s.at(s.i - 1); {
		case prev == '=':
			s.i++
			nf := s.push(kArray)
			nf.possible, nf.certain = false, false
			return
		case strings.IndexByte("?*+@!", prev) >= 0:
			s.unsure("extended glob")
			return
		case s.at(s.i+1) == '(':
			s.unsure("(( inside a word")
			return
		}
	}
	if s.at(s.i+1) == '(' {
		s.i += 2
		nf := s.push(kArith)
		nf.cmd = true
		return
	}
	s.i++
	s.push(kSubshell)
}

func (s *nestScan) closeParen() {
	s.discardSoft()
	switch s.top().kind {
	case kSubshell:
		s.i++
		s.pop()
		s.compoundEnd()
	case kArray:
		s.i++
		s.pop()
		s.hard().boundary = bYes
	case kCmdSubst, kProcSubst:
		s.i++
		s.pop()
		s.hard().boundary = bNone // part of a word
	default:
		s.unsure(") that closes nothing the scan has open")
	}
}

// heredoc reads a here-document operator's delimiter; the body comes
// after the next newline, read by newline.
func (s *nestScan) heredoc(f *nestFrame, dash bool) {
	if s.bq > 0 {
		s.unsure("here-document inside `..`")
		return
	}
	if s.docs++; s.docs > maxHeredocs {
		s.fail("more than %d here-documents", maxHeredocs)
		return
	}
	for s.at(s.i) == ' ' || s.at(s.i) == '\t' {
		s.i++
	}
	d := pendingDoc{dash: dash, serial: f.serial}
	if q := s.at(s.i); q == '\'' || q == '"' {
		j := strings.IndexByte(s.src[s.i+1:], q)
		if j < 0 {
			s.i = len(s.src)
			return
		}
		d.delim, d.quoted = s.src[s.i+1:s.i+1+j], true
		s.i += j + 2
	} else {
		j := s.i
		for j < len(s.src) && isDelimByte(s.src[j]) {
			j++
		}
		d.delim = s.src[s.i:j]
		s.i = j
	}
	if d.delim == "" || strings.IndexFunc(d.delim, func(r rune) bool { return r > 0x7f || !isDelimByte(byte(r)) }) >= 0 ||
		s.i < len(s.src) && !wordEnd(s.src[s.i]) {
		s.unsure("here-document delimiter that is not a plain word")
		return
	}
	s.word()
	f.boundary = bYes
	s.hdocs = append(s.hdocs, d)
}

// newline handles a newline in a frame of commands or case patterns: the
// bodies of the here-documents before it, which the parser reads as it
// meets the newline in the frame of their operators, then the end of a
// statement.
func (s *nestScan) newline(f *nestFrame) {
	if len(s.hdocs) > 0 {
		s.bodies()
		if s.why != "" {
			return
		}
	}
	if f.lexMode() == mCmd {
		s.newlineSeparator(f)
	} else {
		f.boundary = bYes
	}
}

// bodies skips the bodies of the pending here-documents, after the newline
// at s.i-1. A body ends at the first line equal to its delimiter (leading
// tabs removed with <<-), as the parser finds it for a quoted delimiter,
// and for an unquoted one whose body holds no $, ` or backslash; the
// parser reads other bodies as expansions, and where it ends them is not
// that simple.
func (s *nestScan) bodies() {
	top := s.top().serial
	pos := s.i
	for k, d := range s.hdocs {
		if d.serial != top {
			s.unsure("here-document whose body starts inside another construct")
			return
		}
		if k > 0 {
			if pos >= len(s.src) {
				break
			}
			pos++ // the newline after the previous terminator
		}
		start, term := pos, -1
		for {
			end := len(s.src)
			if j := strings.IndexByte(s.src[pos:], '\n'); j >= 0 {
				end = pos + j
			}
			line := s.src[pos:end]
			if d.dash {
				line = strings.TrimLeft(line, "\t")
			}
			if line == d.delim {
				term, pos = pos, end
				break
			}
			if end == len(s.src) {
				pos = end
				break
			}
			pos = end + 1
		}
		bodyEnd := term
		if term < 0 {
			bodyEnd = len(s.src)
		}
		if !d.quoted && strings.ContainsAny(s.src[start:bodyEnd], "$`\\") {
			s.unsure("here-document with an unquoted delimiter whose body has $, ` or a backslash")
			return
		}
		if term < 0 {
			break
		}
	}
	s.i = pos
	s.hdocs = s.hdocs[:0]
}

// ---- case patterns

func (s *nestScan) caseStep() {
	f := s.hard()
	c := s.src[s.i]
	switch c {
	case ' ', '\t':
		s.i++
		f.boundary = bYes
		return
	case '\n':
		s.i++
		s.newline(f)
		return
	case '\\':
		if s.at(s.i+1) == '\n' {
			if f.boundary == bNone || s.bq > 0 {
				s.unsure("backslash-newline inside a word")
				return
			}
			s.i += 2
			return
		}
	case '(':
		if f.caseState == casePattern && f.patStart && f.boundary != bNone {
			s.i++
			f.patStart, f.boundary = false, bYes
			return
		}
		s.unsure("( inside a case pattern")
		return
	case ')':
		s.discardSoft()
		if f.caseState != casePattern || f.patStart || s.top() != f {
			s.unsure(") where the scan expects no end of case patterns")
			return
		}
		s.i++
		s.separator(f, true)
		f.caseState = caseBody
		return
	case '|':
		if f.caseState != casePattern || f.patStart {
			s.unsure("| outside case patterns")
			return
		}
		s.i++
		f.boundary = bYes
		return
	case ';', '&', '<', '>':
		s.unsure("operator inside a case's patterns")
		return
	}
	if f.boundary != bNone {
		if c == '#' {
			s.comment()
			return
		}
		f.boundary = bNone
		s.word()
		j := s.i
		for j < len(s.src) && !wordEnd(s.src[j]) && strings.IndexByte("'\"`$\\", s.src[j]) < 0 {
			j++
		}
		w, plain := s.src[s.i:j], j == len(s.src) || wordEnd(s.src[j])
		switch f.caseState {
		case caseSubject:
			f.caseState = caseIn
		case caseIn:
			if !plain || w != "in" {
				s.unsure("case without in")
				return
			}
			s.i = j
			f.caseState, f.patStart = casePattern, true
			return
		case casePattern:
			if f.patStart && plain && w == "esac" {
				s.i = j
				s.pop()
				s.compoundEnd()
				return
			}
			f.patStart = false
		}
		if plain {
			s.plainWord(w)
			return
		}
	}
	s.wordChar(c)
}

// ---- double quotes, parameters, arithmetic, tests

func (s *nestScan) dqStep() {
	switch s.src[s.i] {
	case '"':
		s.i++
		s.pop()
		s.afterPart()
	case '\\':
		if s.bq > 0 {
			s.unsure("backslash inside `..`")
			return
		}
		s.i = min(s.i+2, len(s.src))
	case '$':
		s.dollar(true)
	case '`':
		s.backquote()
	default:
		s.i++
	}
}

// afterPart marks the frame a word part ended in as inside a word.
func (s *nestScan) afterPart() {
	s.hard().boundary = bNone
}

func (s *nestScan) paramStep() {
	c := s.src[s.i]
	switch c {
	case '}':
		s.discardSoft()
		if s.top().kind != kParam {
			s.unsure("} that closes nothing the scan has open")
			return
		}
		s.i++
		s.pop()
		s.afterPart()
	case '\'':
		s.squote()
	case '"':
		s.i++
		s.push(kDQ)
	case '$':
		s.dollar(false)
	case '`':
		s.backquote()
	case '\\':
		if s.bq > 0 {
			s.unsure("backslash inside `..`")
			return
		}
		s.i = min(s.i+2, len(s.src))
	case '(':
		s.i++
		s.push(kSoftParen)
	case ')':
		s.i++
		if s.top().kind == kSoftParen {
			s.pop()
		}
	case '[':
		s.i++
		s.push(kIndex)
	case ']':
		s.i++
		if s.top().kind == kIndex {
			s.pop()
		}
	default:
		if chainOp(c) {
			s.chain(s.top())
		}
		s.i++
	}
}

func (s *nestScan) arithStep() {
	c := s.src[s.i]
	switch c {
	case ' ', '\t', '\n':
		s.i++
	case '(':
		s.i++
		s.push(kParen)
	case ')':
		s.discardSoft()
		t := s.top()
		switch {
		case t.kind == kParen:
			s.i++
			s.pop()
		case t.kind == kArith && s.at(s.i+1) == ')':
			s.i += 2
			cmd := t.cmd
			s.pop()
			if cmd {
				s.compoundEnd()
			} else {
				s.afterPart()
			}
		default:
			s.unsure(") that closes nothing the scan has open")
		}
	case '[':
		s.i++
		s.push(kIndex)
	case ']':
		s.i++
		switch s.top().kind {
		case kIndex:
			s.pop()
		case kArithB:
			s.pop()
			s.afterPart()
		}
	case '$':
		s.dollar(false)
	case '`':
		s.backquote()
	case '\'', '"':
		s.unsure("quotes in arithmetic")
	case '\\':
		if s.at(s.i+1) != '\n' {
			s.unsure("backslash in arithmetic")
			return
		}
		s.i += 2
	case '#':
		if p := s.at(s.i - 1); p == ' ' || p == '\t' || p == '\n' || p == '(' {
			s.unsure("# in arithmetic")
			return
		}
		s.i++
	default:
		switch {
		case chainOp(c):
			s.chain(s.top())
		case strings.IndexByte("/%<>&|^,", c) >= 0:
			s.flatten(s.top()) // left-associative: nested in the tree
		}
		s.i++
	}
}

func (s *nestScan) testStep() {
	f := s.hard()
	c := s.src[s.i]
	switch c {
	case ' ', '\t', '\n':
		s.i++
		f.boundary = bYes
		return
	case '\\':
		if s.at(s.i+1) == '\n' {
			if f.boundary == bNone || s.bq > 0 {
				s.unsure("backslash-newline inside a word")
				return
			}
			s.i += 2
			return
		}
	}
	wasBoundary := f.boundary != bNone
	if wasBoundary {
		if c == '#' {
			s.unsure("# in [[ ]]")
			return
		}
		if strings.HasPrefix(s.src[s.i:], "]]") && (s.i+2 == len(s.src) || wordEnd(s.src[s.i+2])) {
			if f.kind != kTest {
				s.unsure("]] inside ( )")
				return
			}
			s.i += 2
			s.pop()
			s.compoundEnd()
			return
		}
		if !strings.ContainsRune("()&|<>;", rune(c)) {
			s.word()
			f.boundary = bNone
		}
	}
	switch c {
	case '(':
		if !wasBoundary && strings.IndexByte("?*+@!", s.at(s.i-1)) >= 0 {
			s.unsure("extended glob")
			return
		}
		s.i++
		s.push(kTestParen)
	case ')':
		if f.kind != kTestParen || s.top() != f {
			s.unsure(") that closes nothing the scan has open")
			return
		}
		s.i++
		s.pop()
		s.hard().boundary = bYes
	case '&', '|':
		if s.at(s.i+1) == c {
			s.i += 2
			s.chain(f)
		} else {
			s.i++
		}
		f.boundary = bYes
	case '<', '>':
		if s.at(s.i+1) == '(' {
			s.i += 2
			s.push(kProcSubst)
			return
		}
		s.i++
		f.boundary = bYes
	case ';':
		s.unsure("; in [[ ]]")
	case '!':
		s.chain(f)
		s.i++
	case '\'':
		s.squote()
	case '"':
		s.i++
		s.push(kDQ)
	case '$':
		s.dollar(false)
	case '`':
		s.backquote()
	case '\\':
		s.escape()
	default:
		s.i++
	}
}
