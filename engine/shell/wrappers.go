package shell

import (
	"github.com/toolgate/toolgate/engine/knowledge"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wrapResult is what a wrapper makes of its arguments.
type wrapResult struct {
	inner []wordInfo // the command the wrapper runs, judged next
	env   []string   // assignments the wrapper adds (env VAR=x)
	self  bool       // judge the wrapper itself as a program (env alone, command -v)
	done  bool       // fully judged here (bash -c payload)
	why   string     // reason to reject; the inner command is still recorded
}

// wrapper unwraps one wrapper command (timeout, xargs, bash -c ...). The
// command it runs is what gets judged.
type wrapper func(a *analyzer, ws []wordInfo, sc *scope, sx *stmtCtx, ic *invCtx) wrapResult

// wrappers maps wrapper names to their unwrappers; set in init because
// bash -c recurses into the analyzer.
var wrappers map[string]wrapper

func init() {
	wrappers = map[string]wrapper{
		"sudo": wrapPriv, "doas": wrapPriv, "su": wrapPriv, "pkexec": wrapPriv, "run0": wrapPriv,
		"env":     wrapEnv,
		"command": wrapCommand,
		"builtin": wrapBuiltin,
		"exec":    wrapExec,
		"nohup":   wrapNohup,
		"nice":    wrapOpts(niceOpts, nil, false),
		"timeout": wrapTimeout,
		"stdbuf":  wrapOpts(stdbufOpts, nil, true),
		"time":    wrapOpts(timeOpts, timeWrites, true),
		"xargs":   wrapXargs,
		"bash":    wrapShell, "sh": wrapShell, "dash": wrapShell, "zsh": wrapShell,
	}
}

var (
	niceOpts    = compileOpts("n: adjustment: #", false)
	stdbufOpts  = compileOpts("i: o: e: input: output: error:", false)
	timeOpts    = compileOpts("p portability v verbose f: format: q quiet", false)
	timeWrites  = compileOpts("o: output: a append", false)
	timeoutOpts = compileOpts("s: signal: k: kill-after: preserve-status foreground v verbose", false)
	xargsOpts   = compileOpts("0 null r no-run-if-empty t verbose x exit n: max-args: L: max-lines: "+
		"P: max-procs: d: delimiter: s: max-chars: I: E: eof:: o open-tty", false)
)

// simple judges a simple command: unwrap wrappers, then check the program
// against the table.
func (a *analyzer) simple(ws []wordInfo, env []string, sc *scope, sx stmtCtx) {
	var ic invCtx
	for hop := 0; ; hop++ {
		name, why := progName(&ws[0])
		if why == "" && hop > 16 {
			why = "too many nested wrappers"
		}
		if why != "" {
			a.record(ws, env, sc, name)
			a.fail(why)
			return
		}
		if wr := wrappers[name]; wr != nil {
			r := wr(a, ws, sc, &sx, &ic)
			if r.why != "" {
				a.fail(r.why)
			}
			if r.done {
				return
			}
			if r.inner != nil {
				env = append(env, r.env...)
				ws = r.inner
				continue
			}
			if !r.self {
				a.record(ws, env, sc, name)
				return
			}
		}
		a.program(ws, env, name, sc, sx, &ic)
		return
	}
}

// program records and judges a program from the table (not a wrapper)
// run with the words ws, whose first is the program named name. It
// returns the program's spec, nil when it is not in the table.
func (a *analyzer) program(ws []wordInfo, env []string, name string, sc *scope, sx stmtCtx, ic *invCtx) *spec {
	a.record(ws, env, sc, name)
	for i := 1; i < len(ws); i++ {
		if credWord(&ws[i]) {
			a.fail("%s: reads credential store %s", name, ws[i].val)
		}
	}
	sp := programs[name]
	if sp == nil {
		a.fail("%s is not a known read-only program", name)
		return nil
	}
	iv := invocation{a: a, sp: sp, name: name, args: ws[1:], sc: sc, sx: &sx, ic: ic}
	if why := iv.run(); why != "" {
		a.fail(why)
	}
	return sp
}

// credWord reports whether a word names a credential store, alone or as
// the value of --opt=VALUE.
func credWord(w *wordInfo) bool {
	if credentialPath(w.cred, w.glob) {
		return true
	}
	if _, v, ok := strings.Cut(w.cred, "="); ok && credentialPath(v, w.glob) {
		return true
	}
	return false
}

func wrapPriv(_ *analyzer, ws []wordInfo, _ *scope, _ *stmtCtx, _ *invCtx) wrapResult {
	return wrapResult{why: ws[0].val + " runs commands with other privileges"}
}

// wrapEnv: env alone prints the environment (read-only); env with
// assignments or options changes what the command sees, like VAR=value
// prefixes, so it is not read-only.
func wrapEnv(_ *analyzer, ws []wordInfo, _ *scope, _ *stmtCtx, _ *invCtx) wrapResult {
	var assigns []string
	opts := false
	i := 1
loop:
	for ; i < len(ws); i++ {
		w := &ws[i]
		if w.dyn {
			return wrapResult{why: "env: argument " + w.val + " is only known at run time"}
		}
		switch v := w.val; {
		case v == "--":
			i++
			break loop
		case v == "-" || strings.HasPrefix(v, "-"):
			opts = true
			switch v {
			case "-u", "-C", "-S", "-P", "--unset", "--chdir", "--split-string":
				i++
			}
		case isAssignment(v):
			assigns = append(assigns, v)
		default:
			break loop
		}
	}
	if i >= len(ws) {
		if len(assigns) > 0 {
			return wrapResult{why: "env with assignments"}
		}
		return wrapResult{self: true}
	}
	r := wrapResult{inner: ws[i:], env: assigns}
	switch {
	case opts:
		r.why = "env: options change how the command runs"
	case len(assigns) > 0:
		r.why = "env: " + assigns[0] + " changes what runs"
	}
	return r
}

// wrapCommand: command -v/-V looks names up (read-only); command [-p] CMD
// runs CMD.
func wrapCommand(_ *analyzer, ws []wordInfo, _ *scope, _ *stmtCtx, _ *invCtx) wrapResult {
	i := 1
	for ; i < len(ws); i++ {
		v := ws[i].val
		if ws[i].dyn || !strings.HasPrefix(v, "-") {
			break
		}
		if v == "--" {
			i++
			break
		}
		if v == "-" {
			// bash takes a lone - as the program's name, not an option.
			return wrapResult{why: "command: - is not an option"}
		}
		if strings.ContainsAny(v, "vV") {
			return wrapResult{self: true}
		}
		if strings.Trim(v[1:], "p") != "" {
			return wrapResult{why: "command: option " + v + " is not allowed"}
		}
	}
	if i >= len(ws) {
		return wrapResult{why: "command without a program"}
	}
	return wrapResult{inner: ws[i:]}
}

func wrapBuiltin(_ *analyzer, ws []wordInfo, _ *scope, _ *stmtCtx, _ *invCtx) wrapResult {
	if len(ws) < 2 {
		return wrapResult{why: "builtin without a command"}
	}
	return wrapResult{inner: ws[1:]}
}

// wrapExec: exec CMD replaces the shell with CMD; exec alone changes the
// shell's file descriptors, and its options change argv[0] or the
// environment.
func wrapExec(_ *analyzer, ws []wordInfo, _ *scope, _ *stmtCtx, _ *invCtx) wrapResult {
	i := 1
	if i < len(ws) && ws[i].is("--") {
		i++
	}
	switch {
	case i >= len(ws):
		return wrapResult{why: "exec without a command changes the shell's file descriptors"}
	case startsOption(&ws[i]):
		return wrapResult{why: "exec: option " + ws[i].val + " is not allowed"}
	}
	return wrapResult{inner: ws[i:]}
}

// wrapNohup: nohup creates nohup.out when its output is a terminal, so it
// is only read-only with stdout redirected (or piped).
func wrapNohup(_ *analyzer, ws []wordInfo, _ *scope, sx *stmtCtx, _ *invCtx) wrapResult {
	i := 1
	if i < len(ws) && ws[i].is("--") {
		i++
	}
	if i >= len(ws) || startsOption(&ws[i]) {
		return wrapResult{why: "nohup without a command"}
	}
	r := wrapResult{inner: ws[i:]}
	if !sx.stdoutRedir {
		r.why = "nohup writes nohup.out when its output is a terminal"
	}
	return r
}

// wrapOpts unwraps wrappers of the form NAME [OPTIONS] CMD ARGS; wo lists
// options that write a file. With needCmd unset, the wrapper alone is
// judged as a program from the table.
func wrapOpts(o, wo *optset, needCmd bool) wrapper {
	return func(a *analyzer, ws []wordInfo, sc *scope, _ *stmtCtx, _ *invCtx) wrapResult {
		name := ws[0].val
		pa, pe := parseGNU(o, wo, ws[1:], true, false)
		if pe != nil {
			if pe.write != "" && pe.write != "/dev/null" {
				a.out.Writes = append(a.out.Writes, sc.paths(pe.write)...)
			}
			return wrapResult{why: path.Base(name) + ": " + pe.why}
		}
		if len(pa.ops) == 0 {
			if needCmd {
				return wrapResult{why: path.Base(name) + " without a command"}
			}
			return wrapResult{self: true}
		}
		return wrapResult{inner: pa.ops}
	}
}

// wrapTimeout: timeout [OPTIONS] DURATION CMD.
func wrapTimeout(_ *analyzer, ws []wordInfo, _ *scope, _ *stmtCtx, _ *invCtx) wrapResult {
	pa, pe := parseGNU(timeoutOpts, nil, ws[1:], true, false)
	if pe != nil {
		return wrapResult{why: "timeout: " + pe.why}
	}
	if len(pa.ops) < 2 {
		return wrapResult{why: "timeout without a command"}
	}
	if d := pa.ops[0]; d.dyn || !isDuration(d.val) {
		return wrapResult{why: "timeout: bad duration " + d.val}
	}
	return wrapResult{inner: pa.ops[1:]}
}

// isDuration reports whether s is a timeout/sleep duration (5, 1.5s, 2m).
func isDuration(s string) bool {
	s = strings.TrimRight(s, "smhd")
	if s == "" || strings.Count(s, ".") > 1 {
		return false
	}
	return allDigits(strings.Replace(s, ".", "", 1))
}

// wrapXargs: xargs runs its command with arguments read from stdin. Those
// arguments are unknown, so the command must accept any argument (dyn),
// unless stdin is a path lister's output and the command's options are all
// harmless: then the arguments are paths under known roots.
func wrapXargs(_ *analyzer, ws []wordInfo, _ *scope, sx *stmtCtx, ic *invCtx) wrapResult {
	pa, pe := parseGNU(xargsOpts, nil, ws[1:], true, false)
	if pe != nil {
		return wrapResult{why: "xargs: " + pe.why}
	}
	inner := pa.ops
	if len(inner) == 0 {
		inner = []wordInfo{synthetic("echo")}
	}
	inner = append([]wordInfo(nil), inner...)
	ic.pathOK = !sx.stdinRedir && sx.producer != nil && isPathLister(sx.producer, sx.producerSc)
	// Names split on blanks (a file called "x .env y.go") unless -0.
	// -d or --delimiter given after -0 wins over it.
	switch {
	case ic.pathOK && pa.has("0", "null") && !pa.has("d", "delimiter"):
		// The files' contents are judged as the trees find lists.
		ic.trees, ic.contentOK, ic.listsDirs = findContent(sx.producer, sx.producerSc, false)
		// What find prints starts with one of its start points, none
		// of which starts with "-" (find reads those as its
		// expression), or with blanks (-ls): read whole, no word
		// starts with "-".
		ic.dashFree = isFind(sx.producer, sx.producerSc)
	case ic.pathOK && !pa.has("0", "null", "d", "delimiter", "I", "i", "replace", "L", "l", "max-lines", "E", "e", "eof"):
		// Split at blanks and read for quotes: the trees' names must
		// hold none of them (Tree.SplitSafe), and then each is read
		// whole, starting with a start point as above.
		ic.trees, ic.contentOK, ic.listsDirs = findContent(sx.producer, sx.producerSc, true)
		ic.split = ic.contentOK
		ic.dashFree = ic.contentOK && isFind(sx.producer, sx.producerSc)
	}
	if repl := pa.values("I"); len(repl) > 0 {
		r := repl[len(repl)-1]
		if r == "" {
			return wrapResult{why: "xargs: empty replacement string"}
		}
		for i := range inner {
			if strings.Contains(inner[i].val, r) {
				// Only a word that is exactly the listed path is a path
				// the lister vouched for: {}/../.env is not.
				inner[i].dyn, inner[i].xargs = true, inner[i].val == r
			}
		}
	} else {
		ic.implicit = true
	}
	return wrapResult{inner: inner}
}

// isPathLister reports whether c prints file paths under static roots that
// are neither credential stores nor their ancestors: find, git ls-files,
// rg --files/-l, grep -l. Options that print free text (find -printf,
// git ls-files --format) disqualify it: they could print any path.
func isPathLister(c *syntax.CallExpr, sc *scope) bool {
	if sc == nil || sc.cwdUnknown || len(c.Assigns) > 0 {
		return false
	}
	ws := make([]wordInfo, len(c.Args))
	for i, w := range c.Args {
		ws[i] = wordOf(w, sc.src)
		if ws[i].dyn || ws[i].glob || ws[i].brace {
			return false
		}
	}
	name, why := progName(&ws[0])
	if why != "" {
		return false
	}
	lister := false
	for i := 1; i < len(ws); i++ {
		v := ws[i].val
		if credWord(&ws[i]) || knowledge.IsCredentialAncestor(v) || knowledge.IsCredentialAncestor(path.Join(sc.cwd, v)) ||
			v == "-printf" || strings.HasPrefix(v, "--format") || strings.HasPrefix(v, "--label") {
			return false
		}
		switch name {
		case "find":
			lister = true
		case "git":
			lister = lister || v == "ls-files"
		case "rg":
			lister = lister || v == "--files" || v == "-l" || v == "--files-with-matches"
		case "grep":
			lister = lister || v == "--files-with-matches" ||
				(strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Trim(v[1:], "lrRsnHiIw") == "" && strings.Contains(v, "l"))
		}
	}
	return lister || name == "find"
}

// isFind reports whether c runs find.
func isFind(c *syntax.CallExpr, sc *scope) bool {
	if c == nil || sc == nil || len(c.Args) == 0 {
		return false
	}
	w := wordOf(c.Args[0], sc.src)
	name, why := progName(&w)
	return why == "" && name == "find"
}

// wrapShell: bash/sh/dash/zsh -c 'payload' runs payload, which is parsed
// and judged like the line itself, up to maxDepth levels. Other uses run
// scripts or read code from stdin, which is not read-only.
func wrapShell(a *analyzer, ws []wordInfo, sc *scope, _ *stmtCtx, _ *invCtx) wrapResult {
	name := path.Base(ws[0].val)
	if len(ws) < 3 || !ws[1].is("-c") {
		return wrapResult{why: name + " runs a script or reads code from stdin; only " + name + " -c 'command' is judged"}
	}
	p := ws[2]
	switch {
	case p.dyn || p.glob || p.brace:
		return wrapResult{why: name + " -c: the command is only known at run time"}
	case sc.depth+1 > maxDepth:
		return wrapResult{why: name + " -c nested too deeply"}
	}
	strict := sc.strict || name != "bash"
	if strict && (strings.Contains(p.val, "$'") || strings.Contains(p.val, `$"`)) {
		return wrapResult{why: name + " -c: $'..' quoting is read differently by " + name}
	}
	a.payload(p.val, &scope{depth: sc.depth + 1, strict: strict, zsh: sc.zsh || name == "zsh", cwd: sc.cwd, cwdUnknown: sc.cwdUnknown, textLeft: sc.textLeft})
	return wrapResult{done: true}
}

// payload parses and judges a bash -c payload in its own scope.
func (a *analyzer) payload(src string, sc *scope) {
	sc.src = src
	f, release, err := parseBounded(src, &a.wordsLeft)
	defer release()
	if le, ok := err.(*LimitError); ok {
		a.fail("payload: %s", le.Reason)
		return
	}
	if err != nil {
		a.fail("payload does not parse: %v", err)
		return
	}
	a.agree(src, f)
	before := a.judged
	a.prescan(f, sc)
	a.stmts(f.Stmts, sc, stmtCtx{})
	if a.judged == before {
		a.fail("empty payload")
	}
}

// findContent reports a find that prints NUL-separated regular files
// (-type f before -print0, its first action, in a plain conjunction of
// primaries: no -o, !, parentheses, -L or -follow) whose every one matches
// -name or -iname globs, at least one, none of which matches a secret name:
// find . -type f -name '*.go' -print0. It returns the trees a program
// reading those files reads: its start points with their hidden files,
// only the files the globs keep. Anything else (-o, -path, no -name, -L,
// -print0 before the tests) may list .env or a link to one.
//
// split: xargs reads find's output without -0, so find prints with
// -print or no action, and the names must survive xargs's splitting
// (Tree.SplitSafe). Then -o between -name tests is read too (their names
// all kept), and without -type f find lists directories and links as
// well (listsDirs; the links are read through).
func findContent(c *syntax.CallExpr, sc *scope, split bool) (trees []Tree, ok, listsDirs bool) {
	if c == nil || sc == nil || len(c.Args) < 2 {
		return nil, false, false
	}
	ws := make([]wordInfo, len(c.Args))
	for i, w := range c.Args {
		ws[i] = wordOf(w, sc.src)
		if ws[i].dyn || ws[i].glob || ws[i].brace {
			return nil, false, false
		}
	}
	if path.Base(ws[0].val) != "find" {
		return nil, false, false
	}
	fl := splitFind(ws[1:])
	if fl.follow {
		return nil, false, false
	}
	if split {
		return findListed(fl, sc)
	}
	at := -1
	for i, w := range fl.expr {
		if findActions[w.val] {
			at = i
			break
		}
	}
	if at < 0 || !fl.expr[at].is("-print0") {
		return nil, false, false
	}
	ff, fok := fl.filterBefore(at)
	if !fok || !ff.regular || len(ff.names)+len(ff.inames) == 0 {
		return nil, false, false
	}
	for _, n := range append(ff.names, ff.inames...) {
		if knowledge.NamePicksSecret(n) {
			return nil, false, false
		}
	}
	names := ff.names // -iname globs ignore case: they keep no name here
	starts := fl.starts
	if len(starts) == 0 {
		starts = []wordInfo{synthetic(".")}
	}
	for _, r := range starts {
		for _, p := range sc.paths(r.val) {
			trees = append(trees, Tree{Path: p, Hidden: true, Names: names})
		}
	}
	return trees, true, false
}

// findListed is findContent for find's output read by xargs without -0:
// an expression of tests joined by -a (with -type f or not) or only of
// -name/-iname tests joined by -o, then -print or no action.
func findListed(fl findLine, sc *scope) ([]Tree, bool, bool) {
	expr := fl.expr
	if n := len(expr); n > 0 && expr[n-1].is("-print") {
		expr = expr[:n-1]
	}
	var names, inames []string
	regular := false
	if alternatives(expr) {
		for i := 0; i+1 < len(expr); i += 3 {
			if expr[i].is("-name") {
				names = append(names, expr[i+1].val)
			} else {
				inames = append(inames, expr[i+1].val)
			}
		}
	} else {
		for _, w := range expr {
			if findActions[w.val] {
				return nil, false, false
			}
		}
		sub := fl
		sub.expr = expr
		ff, ok := sub.filterBefore(len(expr))
		if !ok {
			return nil, false, false
		}
		names, inames, regular = ff.names, ff.inames, ff.regular
	}
	if len(names)+len(inames) == 0 {
		return nil, false, false
	}
	for _, n := range append(names, inames...) {
		if knowledge.NamePicksSecret(n) {
			return nil, false, false
		}
	}
	if len(inames) > 0 {
		names = nil // case ignored: they keep no name here
	}
	starts := fl.starts
	if len(starts) == 0 {
		starts = []wordInfo{synthetic(".")}
	}
	var trees []Tree
	for _, r := range starts {
		if strings.ContainsAny(r.val, " \t\n\v\f\r\"'\\") {
			return nil, false, false
		}
		for _, p := range sc.paths(r.val) {
			trees = append(trees, Tree{Path: p, Hidden: true, Names: names, SplitSafe: true, Follow: !regular, FollowNamed: !regular})
		}
	}
	return trees, true, !regular
}

// alternatives reports whether expr is -name P or -iname P tests joined
// by -o (or -or) and nothing else.
func alternatives(expr []wordInfo) bool {
	if len(expr) < 2 {
		return false
	}
	for i := 0; i < len(expr); i += 3 {
		if i+1 >= len(expr) || !expr[i].is("-name") && !expr[i].is("-iname") {
			return false
		}
		if i+2 < len(expr) && !expr[i+2].is("-o") && !expr[i+2].is("-or") {
			return false
		}
		if i+2 == len(expr)-1 {
			return false // a dangling -o
		}
	}
	return true
}

// findActions are find's primaries that act on a file (print, run,
// write, delete or stop).
var findActions = map[string]bool{"-print": true, "-print0": true, "-printf": true, "-ls": true, "-fls": true,
	"-fprint": true, "-fprint0": true, "-fprintf": true, "-exec": true, "-execdir": true, "-ok": true, "-okdir": true,
	"-delete": true, "-quit": true}
