package shell

import (
	"context"
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/toolgate/toolgate/engine/knowledge"
)

// analyzer walks one line and its nested payloads, filling an Analysis.
type analyzer struct {
	out    *Analysis
	judged int // simple commands judged
	// textLeft is what remains of the bytes of command text (Command.Text)
	// and of paths joined to a cd's directory the analysis may produce:
	// four times the line's length and maxTextSlack. The text of a command
	// in a substitution is repeated in the text of the command around it,
	// and each path read after cd repeats the directory.
	textLeft int
	// stopped is set when a bound is met: nothing more is judged.
	stopped bool
	// wordsLeft is what remains of maxWords for the line's payloads.
	wordsLeft int
	// ctx ends the analysis early; it is looked at every ctxEvery
	// statements.
	ctx   context.Context
	stmtN int
}

// ctxEvery is how many statements the analysis judges between looks at its
// context: a statement takes microseconds.
const ctxEvery = 64

// limit stops the analysis at a bound on its work (or at the end of its
// context, err): the line is not read-only, and rules treat it as a line
// that did not parse.
func (a *analyzer) limit(why string, err error) {
	if a.stopped {
		return
	}
	a.stopped = true
	if a.out.ParseErr == nil {
		a.out.ParseErr = &LimitError{Reason: why, Err: err}
	}
	a.fail(why)
}

// spent stops the analysis once the text it produced exceeds its bound,
// or its context ended.
func (a *analyzer) spent() {
	if a.textLeft < 0 {
		a.limit("more command text than the analysis produces for a line of this size (substitutions nested in long commands, or long paths after cd)", nil)
	}
	if a.stmtN++; a.stmtN%ctxEvery == 0 && a.ctx != nil && a.ctx.Err() != nil {
		a.limit("the analysis stopped: "+a.ctx.Err().Error(), a.ctx.Err())
	}
}

// scope is one parsed source: the line itself or a bash -c payload.
type scope struct {
	src   string
	depth int
	// strict is set for payloads of shells other than bash (sh, dash, zsh),
	// which read $'..', globs and some redirections differently: syntax
	// whose meaning differs is rejected there.
	strict bool
	// zsh is set for zsh payloads, where globs may carry qualifiers that
	// run code (*(e:'cmd':)).
	zsh bool
	// cwd is the directory a static cd moved to, relative to the starting
	// directory ("" when no cd ran); cwdUnknown is set when a cd goes
	// somewhere the analysis cannot know, so relative reads cannot be
	// checked for credentials.
	cwd        string
	cwdUnknown bool
	// textLeft is the analyzer's: paths joins a cd's directory to a
	// relative path only while there is text left.
	textLeft *int
	// assigned are the names the script itself set (base="${f%.go}", a
	// for loop's variable, read's names), visible only to what runs after
	// them for certain: later statements of the same list and what those
	// contain (see stmts), a loop's body, the right side of && after a
	// read. Until then a name holds whatever the environment gave it.
	assigned []string
	// loops are the for loops' variables bound to a static word in the
	// body being judged (loops.go), innermost last.
	loops []loopBinding
}

// isAssigned reports whether an assignment the analysis judged set name
// before what is being judged now.
func (sc *scope) isAssigned(name string) bool {
	for _, n := range sc.assigned {
		if n == name {
			return true
		}
	}
	return false
}

// paths returns p as written and, after a static cd, also joined to where
// the cd went (not cleaned: .. must follow symlinks): the cd may not have
// happened (it failed, or ran in a subshell or another pipeline part), so
// rules and checks see both readings (cd config && cat prod.json may read
// config/prod.json or prod.json).
func (sc *scope) paths(p string) []string {
	if sc == nil || sc.cwd == "" || sc.cwdUnknown || !isRelative(p) {
		return []string{p}
	}
	if sc.textLeft != nil {
		if *sc.textLeft -= len(sc.cwd) + len(p); *sc.textLeft < 0 {
			return []string{p} // the analysis stops (analyzer.spent)
		}
	}
	return []string{p, strings.TrimSuffix(sc.cwd, "/") + "/" + p}
}

// stmtCtx is what a statement knows about its standard streams.
type stmtCtx struct {
	producer    *syntax.CallExpr // command piped into this statement's stdin, if simple
	producerSc  *scope
	stdinRedir  bool // stdin comes from a redirection (<, <<, <<<)
	stdoutRedir bool
}

// fail records the first reason the line is not read-only.
func (a *analyzer) fail(format string, args ...any) {
	if a.out.Reason != "" {
		return
	}
	if len(args) > 0 {
		format = fmt.Sprintf(format, args...)
	}
	a.out.Reason = format
}

// stmts judges a statement list. An assignment that runs in it is seen by
// the statements after it, not after the list: the list may be a loop's
// body that never runs, a branch, a subshell or a substitution.
func (a *analyzer) stmts(list []*syntax.Stmt, sc *scope, sx stmtCtx) {
	mark := len(sc.assigned)
	a.stmtsKeep(list, sc, sx)
	sc.assigned = sc.assigned[:mark]
}

// stmtsKeep judges a statement list and leaves the names it surely
// assigns for what runs after it (an if's branches after its condition).
func (a *analyzer) stmtsKeep(list []*syntax.Stmt, sc *scope, sx stmtCtx) {
	for _, s := range list {
		if a.spent(); a.stopped {
			return
		}
		sc.assigned = sc.assigned[:a.stmt(s, sc, sx)]
	}
}

// cond judges a condition list (if, while) and returns the length of
// sc.assigned once it ran: the names its statements surely set. What its
// last statement sets only when it succeeds (read x) is left after that,
// for what runs when the condition held.
func (a *analyzer) cond(list []*syntax.Stmt, sc *scope, sx stmtCtx) int {
	ran := len(sc.assigned)
	for i, s := range list {
		set := a.stmt(s, sc, sx)
		if i < len(list)-1 {
			sc.assigned = sc.assigned[:set]
		}
		ran = set
	}
	return ran
}

// readNames returns the names a plain read assigns ("read [-r] name..."
// run directly, not through a wrapper), or nil. Its other options may
// leave the names unset while read succeeds (-t 0 only tests for input,
// -u names another descriptor, -N and -n count characters, -d and -p and
// the rest are not needed to read lines).
func readNames(c *syntax.CallExpr, sc *scope) []string {
	if len(c.Args) < 2 || len(c.Assigns) > 0 {
		return nil
	}
	if w := wordOf(c.Args[0], sc.src); !w.is("read") || w.glob || w.brace {
		return nil
	}
	var names []string
	for i, arg := range c.Args[1:] {
		w := wordOf(arg, sc.src)
		switch {
		case i == 0 && len(names) == 0 && w.is("-r"):
			continue
		case w.dyn || w.glob || w.brace || !localName(w.val):
			return nil
		}
		names = append(names, w.val)
	}
	return names
}

// stmt judges a statement. Of the names assignments in it set (appended
// to sc.assigned), those up to the returned length are set once it ran;
// the rest only when it succeeded, which is what the right side of && may
// count on (a && x=1 && echo $x).
func (a *analyzer) stmt(s *syntax.Stmt, sc *scope, sx stmtCtx) int {
	if s.Coprocess || s.Disown {
		a.fail("coprocess or disown")
	}
	for _, r := range s.Redirs {
		switch r.Op {
		case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.RdrInOut:
			if r.N == nil || r.N.Value == "0" {
				sx.stdinRedir = true
				sx.producer = nil
			}
		case syntax.DplIn:
			if r.N == nil || r.N.Value == "0" {
				sx.stdinRedir = true
				sx.producer = nil
			}
		default:
			if r.N == nil || r.N.Value == "1" {
				sx.stdoutRedir = true
			}
		}
	}
	mark, set := len(sc.assigned), -1
	switch c := s.Cmd.(type) {
	case nil:
		a.fail("redirection without a command")
	case *syntax.CallExpr:
		a.call(c, sc, sx)
		if len(c.Args) == 0 && len(s.Redirs) > 0 {
			// A failing redirection may leave the assignment undone.
			sc.assigned = sc.assigned[:mark]
		}
		if names := readNames(c, sc); names != nil {
			// read assigns its names when it succeeds (or meets the end
			// of its input); a read error (a closed or unreadable
			// stdin) leaves them as they were: they count only where
			// read succeeded (read x && echo $x, while read x; do).
			set = len(sc.assigned)
			sc.assigned = append(sc.assigned, names...)
		}
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt:
			// The left side always runs; the right side runs after it
			// succeeded, and may not run.
			set = a.stmt(c.X, sc, sx)
			a.stmt(c.Y, sc, sx)
		case syntax.OrStmt:
			// The right side runs after the left one failed.
			set = a.stmt(c.X, sc, sx)
			sc.assigned = sc.assigned[:set]
			a.stmt(c.Y, sc, sx)
			sc.assigned = sc.assigned[:set]
		case syntax.Pipe, syntax.PipeAll:
			// Each part of a pipeline runs in a subshell.
			left := sx
			left.stdoutRedir = true // a pipe, not a terminal
			a.stmt(c.X, sc, left)
			sc.assigned = sc.assigned[:mark]
			a.stmt(c.Y, sc, stmtCtx{producer: lastCall(c.X), producerSc: sc})
			sc.assigned = sc.assigned[:mark]
		default:
			a.fail("unsupported operator %s", c.Op)
		}
	case *syntax.Subshell:
		a.stmts(c.Stmts, sc, sx)
	case *syntax.Block:
		a.stmts(c.Stmts, sc, sx)
	case *syntax.IfClause:
		// A branch runs after its condition succeeded, the next ones
		// after it failed.
		for ic := c; ic != nil; ic = ic.Else {
			ran := a.cond(ic.Cond, sc, sx)
			a.stmts(ic.Then, sc, sx)
			sc.assigned = sc.assigned[:ran]
		}
		sc.assigned = sc.assigned[:mark]
	case *syntax.WhileClause:
		// The body runs after the condition succeeded (until: failed).
		ran := a.cond(c.Cond, sc, sx)
		if c.Until {
			sc.assigned = sc.assigned[:ran]
		}
		a.stmts(c.Do, sc, sx)
		sc.assigned = sc.assigned[:mark]
	case *syntax.ForClause:
		if c.Select {
			a.fail("select is interactive")
		}
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			if l.Name != nil && !localName(l.Name.Value) {
				a.fail("the loop sets " + l.Name.Value + ", which the shell or the programs it starts may read")
			}
			// The items expand before the variable is set. Each run of
			// the body follows an assignment of the variable, but after
			// the loop it holds the environment's value when no item
			// expanded to a word (for x in; for x in $(true); for x;
			// with no arguments): it counts in the body only.
			for _, w := range l.Items {
				a.wordSubs(w, sc)
			}
			if l.Name != nil {
				sc.assigned = append(sc.assigned, l.Name.Value)
			}
			if ws := loopWords(l, c.Do, sc.src); ws != nil {
				// The body, once for each word the variable takes.
				for _, w := range ws {
					sc.loops = append(sc.loops, loopBinding{name: l.Name.Value, w: w})
					a.stmts(c.Do, sc, sx)
					sc.loops = sc.loops[:len(sc.loops)-1]
				}
				sc.assigned = sc.assigned[:mark]
				break
			}
			a.stmts(c.Do, sc, sx)
		default:
			a.fail("C-style for loop")
			a.nodeSubs(l, sc)
			a.stmts(c.Do, sc, sx)
		}
		sc.assigned = sc.assigned[:mark]
	case *syntax.CaseClause:
		a.wordSubs(c.Word, sc)
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				a.wordSubs(p, sc)
			}
			a.stmts(it.Stmts, sc, sx)
		}
	case *syntax.TestClause:
		// Not counted as a command: [[ ]] alone does nothing worth
		// allowing, and Commands lists simple commands only.
		a.testExpr(c.X, sc)
	case *syntax.TimeClause:
		if c.Stmt == nil {
			a.fail("time without a command")
		} else {
			a.stmt(c.Stmt, sc, sx)
		}
	case *syntax.FuncDecl:
		a.fail("function definition")
	case *syntax.ArithmCmd:
		a.fail("arithmetic command may assign variables")
		a.nodeSubs(c, sc)
	case *syntax.DeclClause:
		a.fail("%s changes shell state", c.Variant.Value)
		a.nodeSubs(c, sc)
	case *syntax.LetClause:
		a.fail("let assigns variables")
		a.nodeSubs(c, sc)
	case *syntax.CoprocClause:
		a.fail("coprocess")
	default:
		a.fail("unsupported shell construct")
	}
	for _, r := range s.Redirs {
		a.redirect(r, sc)
	}
	switch {
	case s.Background:
		// A background statement runs in a subshell.
		sc.assigned = sc.assigned[:mark]
		return mark
	case set < 0:
		set = len(sc.assigned)
	}
	if s.Negated {
		// ! a succeeds when a failed.
		sc.assigned = sc.assigned[:set]
	}
	return set
}

// lastCall returns the simple command at the end of a pipeline, whose output
// is what the next pipeline element reads. A command with redirections
// other than to /dev/null (2>&1 mixes in error messages) is not returned.
func lastCall(s *syntax.Stmt) *syntax.CallExpr {
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		for _, r := range s.Redirs {
			if r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Word.Lit() != "/dev/null" {
				return nil
			}
		}
		return c
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			return lastCall(c.Y)
		}
	}
	return nil
}

// call judges one simple command.
func (a *analyzer) call(c *syntax.CallExpr, sc *scope, sx stmtCtx) {
	if a.stopped {
		return
	}
	var env []string
	for _, as := range c.Assigns {
		env = append(env, source(sc.src, as))
	}
	if len(c.Args) == 0 {
		a.assigns(c, sc)
		return
	} else {
		if len(env) > 0 {
			a.fail("environment prefix %s changes what runs", env[0])
		}
		ws := make([]wordInfo, len(c.Args))
		for i, w := range c.Args {
			if b, ok := sc.boundWord(w); ok {
				ws[i] = b
				continue
			}
			ws[i] = wordOf(w, sc.src)
		}
		a.simple(ws, env, sc, sx)
	}
	for _, as := range c.Assigns {
		a.nodeSubs(as, sc)
	}
	for _, w := range c.Args {
		a.wordSubs(w, sc)
	}
}

// assigns judges a statement of plain assignments (base="${f%.go}").
// Each sets a variable of the script's own (localName), from a value
// whose expansions are proven like an argument's; later statements may
// then expand the name. Anything else changes shell state: arrays,
// subscripts (arithmetic), names bash or the programs it starts read,
// and every assignment in a payload of a shell other than bash.
func (a *analyzer) assigns(c *syntax.CallExpr, sc *scope) {
	for _, as := range c.Assigns {
		name := ""
		if as.Name != nil {
			name = as.Name.Value
		}
		ok := false
		switch {
		case sc.strict:
			a.fail("variable assignment in a non-bash payload")
		case as.Naked || as.Index != nil || as.Array != nil || as.Name == nil:
			a.fail("variable assignment changes shell state: %s", source(sc.src, as))
		case !localName(name):
			a.fail("variable assignment sets %s, which the shell or the programs it starts may read", name)
		case as.Append && !sc.isAssigned(name) && !knowledge.HarmlessVar(name):
			// x+=v appends to what x holds, the environment's value
			// unless the script set it: it expands $x.
			a.fail("%s+= appends to %s's value from the environment, which is not known to be harmless to print", name, name)
		default:
			ok = true
		}
		// The value expands before the name is set: x=$x reads the
		// environment's x.
		a.nodeSubs(as, sc)
		if ok {
			sc.assigned = append(sc.assigned, name)
		}
	}
}

// localName reports whether name is a variable only the script gives a
// meaning: lower-case letters, digits and underscores, with a letter, and
// none of the names bash (auto_resume, histchars, _), zsh (specialVar) or
// the programs it starts (http_proxy and the other *_proxy) read.
func localName(name string) bool {
	if !isName(name) || !strings.ContainsAny(name, "abcdefghijklmnopqrstuvwxyz") ||
		strings.ContainsAny(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") || specialVar(name) {
		return false
	}
	switch name {
	case "auto_resume", "histchars":
		return false
	}
	return !strings.HasSuffix(name, "_proxy")
}

// record adds a Command for the final argv of a simple command.
func (a *analyzer) record(ws []wordInfo, env []string, sc *scope, name string) {
	a.judged++
	cmd := Command{Env: env, Argv: make([]string, len(ws))}
	for i := range ws {
		cmd.Argv[i] = ws[i].val
		if ws[i].dyn {
			cmd.Dynamic = true
		}
	}
	if name != "" {
		cmd.Argv[0] = name
	}
	first, last := ws[0], ws[len(ws)-1]
	switch {
	case first.pos >= 0 && last.end >= first.pos && last.end <= len(sc.src):
		cmd.Text = sc.src[first.pos:last.end]
	default:
		cmd.Text = strings.Join(cmd.Argv, " ")
	}
	if a.textLeft -= len(cmd.Text); a.textLeft < 0 {
		a.spent()
		return
	}
	a.out.Commands = append(a.out.Commands, cmd)
}

// wordSubs analyzes the code a word runs when it is expanded: command and
// process substitutions, and parameter and arithmetic expansions that may
// evaluate code.
func (a *analyzer) wordSubs(w *syntax.Word, sc *scope) {
	if w != nil {
		a.nodeSubs(w, sc)
	}
}

func (a *analyzer) nodeSubs(n syntax.Node, sc *scope) {
	syntax.Walk(n, func(n syntax.Node) bool {
		if a.stopped {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst:
			if n.TempFile || n.ReplyVar {
				a.fail("mksh command substitution")
			}
			a.stmts(n.Stmts, sc, stmtCtx{})
			return false
		case *syntax.ProcSubst:
			if n.Op == syntax.CmdInTemp {
				a.fail("zsh process substitution")
			}
			if sc.strict {
				a.fail("process substitution in a non-bash payload")
			}
			a.stmts(n.Stmts, sc, stmtCtx{})
			return false
		case *syntax.ParamExp:
			if !simpleParam(n) {
				a.fail(paramReason(n))
			} else if name := n.Param.Value; !knowledge.HarmlessVar(name) && !sc.isAssigned(name) {
				// Allowlist: a variable nobody listed may hold a secret
				// under any name (*_PASS, *_URL, *WEBHOOK*).
				a.fail("expands $%s, which is not known to be harmless to print", name)
			}
		case *syntax.ArithmExp:
			a.arith(n.X)
		case *syntax.SglQuoted:
			if n.Dollar && sc.strict {
				a.fail("$'..' quoting in a non-bash payload")
			}
		case *syntax.DblQuoted:
			if n.Dollar && sc.strict {
				a.fail("$\"..\" quoting in a non-bash payload")
			}
		case *syntax.ExtGlob:
			// Non-interactive bash has extglob off, so a script has no use
			// for one; zsh, which runs agents' commands on macOS, reads
			// *(e:'cmd':) as a glob qualifier that runs cmd.
			a.fail("extended glob or zsh glob qualifier")
		}
		return true
	})
}

// arith accepts arithmetic made of number literals and operators only: a
// variable name is evaluated recursively and its value may hold a
// subscript with a command substitution, and assignments change state.
func (a *analyzer) arith(x syntax.ArithmExpr) {
	switch x := x.(type) {
	case nil:
	case *syntax.BinaryArithm:
		switch x.Op {
		case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
			syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn,
			syntax.AndBoolAssgn, syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
			a.fail("arithmetic assignment")
		}
		a.arith(x.X)
		a.arith(x.Y)
	case *syntax.UnaryArithm:
		if x.Op == syntax.Inc || x.Op == syntax.Dec {
			a.fail("arithmetic assignment")
		}
		a.arith(x.X)
	case *syntax.ParenArithm:
		a.arith(x.X)
	case *syntax.Word:
		if !isNumber(x.Lit()) {
			a.fail("arithmetic on variables or substitutions")
		}
	default:
		a.fail("unsupported arithmetic")
	}
}

// isNumber reports whether s is a bash integer literal (10, 0x1f, 2#101).
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	if i := strings.IndexByte(s, '#'); i > 0 {
		return allDigits(s[:i]) && isAlnum(s[i+1:])
	}
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return isAlnum(s[2:])
	}
	return allDigits(s)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isAlnum(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// testExpr judges a [[ ]] expression. Arithmetic comparisons (-eq ...)
// evaluate their operands as arithmetic and -v/-R evaluate subscripts, both
// of which can run command substitutions hidden in strings.
func (a *analyzer) testExpr(x syntax.TestExpr, sc *scope) {
	switch x := x.(type) {
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			a.fail("arithmetic comparison in [[ ]] evaluates its operands")
		}
		a.testExpr(x.X, sc)
		a.testExpr(x.Y, sc)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			a.fail("[[ -v ]] evaluates subscripts")
		}
		a.testExpr(x.X, sc)
	case *syntax.ParenTest:
		a.testExpr(x.X, sc)
	case *syntax.Word:
		a.wordSubs(x, sc)
	default:
		a.fail("unsupported test expression")
	}
}

// redirect judges one redirection: only fd duplication, /dev/null and
// input from files keep a command read-only.
func (a *analyzer) redirect(r *syntax.Redirect, sc *scope) {
	if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
		a.fail("redirection assigns a file descriptor variable")
	}
	var wi wordInfo
	if r.Word != nil {
		wi = wordOf(r.Word, sc.src)
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob:
		if !wi.is("/dev/null") {
			a.out.Writes = append(a.out.Writes, sc.paths(wi.val)...)
			a.fail("writes to %s", wi.val)
		}
	case syntax.DplOut, syntax.DplIn:
		// >&2, 2>&1, >&- duplicate or close descriptors; >&file writes.
		if !wi.dyn && isFdWord(wi.val) {
			break
		}
		if r.Op == syntax.DplOut && wi.is("/dev/null") {
			break
		}
		if r.Op == syntax.DplOut {
			a.out.Writes = append(a.out.Writes, sc.paths(wi.val)...)
			a.fail("writes to %s", wi.val)
		} else {
			a.fail("unsupported redirection <&%s", wi.val)
		}
	case syntax.RdrIn:
		switch {
		case wi.pipe:
		case wi.dyn:
			a.fail("reads from a path computed at run time")
		case wi.brace:
			a.fail("brace expansion in a redirection")
		default:
			a.out.Reads = append(a.out.Reads, sc.paths(wi.val)...)
			if why := a.readPath(wi.val, wi.glob, sc); why != "" {
				a.fail(why)
			}
		}
	case syntax.RdrInOut:
		a.fail("<> opens %s for writing", wi.val)
	case syntax.Hdoc, syntax.DashHdoc:
		a.wordSubs(r.Hdoc, sc)
		return // the delimiter is not expanded
	case syntax.WordHdoc:
		if sc.strict {
			// dash reads <<< as a here-document delimited by "<".
			a.fail("here-string in a non-bash payload")
		}
	default:
		a.fail("unsupported redirection %s", r.Op)
	}
	if hasNetDevice(wi.val) {
		a.fail("uses /dev/tcp or /dev/udp")
	}
	a.wordSubs(r.Word, sc)
}

// isFdWord reports whether s names a file descriptor for >& and <&: digits,
// optionally followed by '-' (move), or '-' alone (close).
func isFdWord(s string) bool {
	s = strings.TrimSuffix(s, "-")
	return s == "" || allDigits(s)
}

// readPath checks a path that a reader opens: credential stores are off
// limits, and a relative path cannot be checked after a cd to an unknown
// directory.
func (a *analyzer) readPath(p string, glob bool, sc *scope) string {
	if credentialPath(p, glob) {
		return "reads credential store " + p
	}
	if isRelative(p) {
		if sc.cwdUnknown {
			return "reads relative path " + p + " after cd to a directory known only at run time"
		}
		if sc.cwd != "" && credentialPath(path.Join(sc.cwd, p), glob) {
			return "reads credential store " + path.Join(sc.cwd, p)
		}
	}
	if hasNetDevice(p) {
		return "uses /dev/tcp or /dev/udp"
	}
	return ""
}

// credentialPath reports a path naming a credential store; glob says
// whether its metacharacters are live.
func credentialPath(p string, glob bool) bool {
	if glob {
		return knowledge.IsCredentialPath(p, "")
	}
	return knowledge.IsCredentialPathLiteral(p, "")
}

// isRelative reports whether p is resolved against the working directory.
func isRelative(p string) bool {
	return !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") && !strings.HasPrefix(p, "$")
}

// prescan looks for cd commands whose target the analysis cannot follow:
// a dynamic target, "cd -", or any cd inside a loop (whose later iterations
// run earlier commands in the new directory). After those, relative reads
// cannot be checked for credentials.
func (a *analyzer) prescan(f *syntax.File, sc *scope) {
	var inLoop func(n syntax.Node, loop bool)
	inLoop = func(n syntax.Node, loop bool) {
		syntax.Walk(n, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.WhileClause, *syntax.ForClause:
				if !loop {
					inLoop(n, true)
					return false
				}
			case *syntax.CallExpr:
				for i, w := range n.Args {
					if !isCdWord(w, sc.src) {
						continue
					}
					if loop {
						sc.cwdUnknown = true
						continue
					}
					if i+1 < len(n.Args) {
						next := wordOf(n.Args[i+1], sc.src)
						if next.dyn || next.glob || next.is("-") {
							sc.cwdUnknown = true
						}
					}
				}
			}
			return true
		})
	}
	inLoop(f, false)
}

// isCdWord reports whether w is cd, pushd or popd, however spelled.
func isCdWord(w *syntax.Word, src string) bool {
	if text := source(src, w); len(text) > 64 || !strings.ContainsAny(text, "dD") {
		return false
	}
	wi := wordOf(w, src)
	if wi.dyn {
		return false
	}
	switch path.Base(wi.val) {
	case "cd", "pushd", "popd":
		return true
	}
	return false
}
