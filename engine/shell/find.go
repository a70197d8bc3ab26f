package shell

import (
	"regexp"
	"strings"
)

// findPrimaries lists the find primaries, operators and options that only
// test or print, with the number of arguments each takes. -exec, -execdir
// (judged by findExec), -ok, -okdir (run programs after asking on the
// terminal), -delete, and -fprint, -fprint0, -fprintf, -fls (write files)
// are left out.
var findPrimaries = map[string]int{
	"-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1, "-regex": 1, "-iregex": 1,
	"-lname": 1, "-ilname": 1, "-type": 1, "-xtype": 1, "-size": 1, "-mtime": 1, "-mmin": 1, "-atime": 1, "-amin": 1,
	"-ctime": 1, "-cmin": 1, "-used": 1, "-newer": 1, "-anewer": 1, "-cnewer": 1, "-perm": 1, "-user": 1, "-group": 1,
	"-uid": 1, "-gid": 1, "-links": 1, "-inum": 1, "-samefile": 1, "-maxdepth": 1, "-mindepth": 1, "-regextype": 1,
	"-fstype": 1, "-context": 1, "-printf": 1,
	"-nouser": 0, "-nogroup": 0, "-empty": 0, "-readable": 0, "-writable": 0, "-executable": 0, "-depth": 0, "-d": 0,
	"-prune": 0, "-print": 0, "-print0": 0, "-ls": 0, "-quit": 0, "-true": 0, "-false": 0, "-follow": 0, "-mount": 0,
	"-xdev": 0, "-noleaf": 0, "-daystart": 0, "-ignore_readdir_race": 0, "-noignore_readdir_race": 0, "-warn": 0,
	"-nowarn": 0, "-not": 0, "!": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0, "(": 0, ")": 0, ",": 0,
	"-help": 0, "--help": 0, "-version": 0, "--version": 0,
}

// findWrites lists the primaries that write the file named by their first
// argument, to report it.
var findWrites = map[string]bool{"-fprint": true, "-fprint0": true, "-fprintf": true, "-fls": true}

var findNewerXY = regexp.MustCompile(`^-newer[aBcmt][aBcmt]$`)

// findLine is a find command's arguments split the way find reads them:
// find [-H|-L|-P|-D opts|-Olevel] [start points] [expression].
type findLine struct {
	starts []wordInfo
	expr   []wordInfo
	follow bool // -L or -follow: find follows links below the start points
}

func splitFind(args []wordInfo) findLine {
	var fl findLine
	i := 0
	for i < len(args) {
		v := args[i].val
		switch {
		case v == "-H" || v == "-P":
			i++
			continue
		case v == "-L":
			fl.follow = true
			i++
			continue
		case v == "-D":
			i += 2
			continue
		case strings.HasPrefix(v, "-O") && allDigits(v[2:]):
			i++
			continue
		}
		break
	}
	for i < len(args) && !findExprStart(args[i].val) {
		fl.starts = append(fl.starts, args[i])
		i++
	}
	fl.expr = args[min(i, len(args)):]
	for _, w := range fl.expr {
		fl.follow = fl.follow || w.is("-follow")
	}
	return fl
}

// findFilter is what a file must be for an action of a plain conjunction
// (no -o, !, -not, parentheses or commas: its primaries are all tested,
// left to right, before an action runs) to see it.
type findFilter struct {
	names   []string // -name globs it matches (fnmatch: case counts)
	inames  []string // -iname globs it matches
	regular bool     // -type f holds
}

// filterBefore returns the filter of the action at index at, or false for
// an expression that is no plain conjunction, about which nothing is
// claimed.
func (fl *findLine) filterBefore(at int) (findFilter, bool) {
	var ff findFilter
	for _, w := range fl.expr {
		switch w.val {
		case "-o", "-or", "!", "-not", "(", ")", ",":
			return ff, false
		}
	}
	for i := 0; i < at && i < len(fl.expr); i++ {
		v := fl.expr[i].val
		if i+1 < at {
			switch v {
			case "-name":
				ff.names = append(ff.names, fl.expr[i+1].val)
			case "-iname":
				ff.inames = append(ff.inames, fl.expr[i+1].val)
			case "-type":
				ff.regular = ff.regular || fl.expr[i+1].is("f")
			}
		}
		if n, known := findPrimaries[v]; known {
			i += n
		} else if findNewerXY.MatchString(v) {
			i++
		}
	}
	return ff, true
}

// checkFind accepts only expressions made of the primaries, operators and
// options in findPrimaries, each with its arguments, and -exec or -execdir
// running a program findExec accepts. The start points are the
// directories it lists (iv.files).
func checkFind(iv *invocation) string {
	args := iv.args
	for _, w := range args {
		// A glob may expand to several words, and one starting with "-"
		// to a primary: a file named -delete matches -*.
		if w.lead || w.glob && strings.HasPrefix(w.val, "-") {
			return iv.failf("glob %s may expand to a find expression", w.val)
		}
	}
	fl := splitFind(args)
	iv.files = fl.starts
	expr := fl.expr
	var execs []findExec
	for i := 0; i < len(expr); {
		v := expr[i].val
		n, ok := findPrimaries[v]
		switch {
		case ok:
		case findNewerXY.MatchString(v):
			n = 1
		case findWrites[v]:
			if i+1 < len(expr) {
				iv.a.out.Writes = append(iv.a.out.Writes, iv.sc.paths(expr[i+1].val)...)
			}
			return iv.failf("%s writes a file", v)
		case v == "-exec" || v == "-execdir":
			end := findExecEnd(expr, i)
			if end < 0 {
				return iv.failf("%s without a terminating ; or {} +", v)
			}
			execs = append(execs, findExec{at: i, dir: v == "-execdir", cmd: expr[i+1 : end], plus: expr[end].val == "+"})
			i = end + 1
			continue
		case v == "-ok" || v == "-okdir":
			return iv.failf("%s runs a program", v)
		case v == "-delete":
			return iv.failf("-delete removes files")
		default:
			return iv.failf("%s is not an allowed find primary", v)
		}
		if i+n >= len(expr) {
			return iv.failf("%s needs an argument", v)
		}
		i += 1 + n
	}
	if len(execs) == 0 {
		return ""
	}
	reads, recursive := false, false
	for _, x := range execs {
		r, rec, why := iv.findExec(x)
		if why != "" {
			return why
		}
		reads, recursive = reads || r, recursive || rec
	}
	if !reads {
		return ""
	}
	// The files -exec reads are those below the start points: each is a
	// tree read with its hidden files, its links followed unless -type f
	// keeps them out (without -L only those the -name globs keep), only
	// the files the -name globs keep when that is all they can be and
	// the program reads nothing else of them.
	ff, ok := fl.filterBefore(execs[0].at)
	t := Tree{Hidden: true, Follow: fl.follow || !ff.regular || !ok}
	if ok && !recursive {
		t.Names = ff.names
		t.FollowNamed = t.Follow && !fl.follow && t.Names != nil
	}
	return iv.recursiveRoots(fl.starts, t)
}

// findExec is one -exec or -execdir action.
type findExec struct {
	at   int        // its index in the expression
	dir  bool       // -execdir: the program runs in each file's directory
	plus bool       // ended by {} +: the paths are appended in batches
	cmd  []wordInfo // the program and its arguments
}

// findExecEnd returns the index of the word that ends the -exec at i: the
// first ";", or a "+" right after a "{}", or -1.
func findExecEnd(expr []wordInfo, i int) int {
	for k := i + 2; k < len(expr); k++ {
		switch {
		case expr[k].is(";"):
			return k
		case expr[k].is("+") && expr[k-1].is("{}"):
			return k
		}
	}
	return -1
}

// findExecPrograms are the programs -exec and -execdir may run: programs on
// disk (find runs them without a shell: no builtin, function or alias)
// that read, list or name the files find hands them, judged by the program
// table like any command. Wrappers, interpreters and shells are not here,
// nor programs that recurse into a directory operand by themselves (du,
// tree, find) or read the files below a directory operand (diff).
var findExecPrograms = map[string]bool{
	"cat": true, "head": true, "tail": true, "nl": true, "tac": true, "rev": true, "od": true, "hexdump": true, "strings": true,
	"base64": true, "grep": true, "egrep": true, "fgrep": true, "rg": true, "sed": true, "awk": true, "gawk": true, "mawk": true,
	"nawk": true, "jq": true, "yq": true, "sort": true, "cut": true, "paste": true, "fold": true, "wc": true,
	"cmp": true, "md5sum": true, "sha1sum": true, "sha224sum": true, "sha256sum": true, "sha384sum": true, "sha512sum": true,
	"b2sum": true, "cksum": true, "shasum": true, "file": true, "ls": true, "stat": true, "basename": true, "dirname": true,
	"realpath": true, "readlink": true, "echo": true, "printf": true, "test": true, "[": true, "true": true, "false": true,
}

// findExec judges the program an -exec or -execdir runs. Every {} in its
// words stands for a path find found (a word that is exactly {} for one
// of the paths, as xargs supplies them); with {} + only the last word may
// hold one. It reports whether the program reads the files (then the
// start points are trees the engine judges) and whether it searched one
// recursively.
func (iv *invocation) findExec(x findExec) (reads, recursive bool, why string) {
	name := "-exec"
	if x.dir {
		name = "-execdir"
	}
	if len(x.cmd) == 0 {
		return false, false, iv.failf("%s without a program", name)
	}
	ws := make([]wordInfo, len(x.cmd))
	for k, w := range x.cmd {
		switch {
		case w.glob || w.brace:
			return false, false, iv.failf("%s: %s may expand to several words, or to ; or {}", name, w.val)
		case k == 0 && strings.Contains(w.val, "{}"):
			return false, false, iv.failf("%s runs the files it finds", name)
		case strings.Contains(w.val, "{}") && x.plus && k != len(x.cmd)-1:
			return false, false, iv.failf("%s ... {} + takes {} only at its end", name)
		case strings.Contains(w.val, "{}"):
			w.dyn, w.split, w.xargs = true, false, w.val == "{}"
		}
		ws[k] = w
	}
	prog, why := progName(&ws[0])
	switch {
	case why != "":
		return false, false, iv.failf("%s: %s", name, why)
	case !findExecPrograms[prog]:
		return false, false, iv.failf("%s runs %s, which is not a program it may run", name, prog)
	case prog == "ls" && lsRecursive(ws[1:]):
		return false, false, iv.failf("%s: ls -R lists what is below the files", name)
	}
	ic := invCtx{found: true}
	nReads, nTrees := len(iv.a.out.Reads), len(iv.a.out.Trees)
	sp := iv.a.program(ws, nil, prog, iv.sc, *iv.sx, &ic)
	if x.dir && (len(iv.a.out.Reads) > nReads || len(iv.a.out.Trees) > nTrees) {
		// Relative to each found file's directory, not to find's.
		return false, false, iv.failf("-execdir %s reads files other than the ones found", prog)
	}
	return sp != nil && sp.reads != readNone, ic.recursive, ""
}

// lsRecursive reports an ls option that lists directories' subtrees.
func lsRecursive(args []wordInfo) bool {
	for _, w := range args {
		if w.is("--") {
			return false
		}
		// GNU ls takes any unambiguous abbreviation: --rec is --recursive.
		if len(w.val) > 4 && strings.HasPrefix("--recursive", w.val) || strings.HasPrefix(w.val, "-") && !strings.HasPrefix(w.val, "--") && strings.Contains(w.val, "R") {
			return true
		}
	}
	return false
}

// findExprStart reports whether v starts find's expression.
func findExprStart(v string) bool {
	return strings.HasPrefix(v, "-") || v == "(" || v == "!" || v == ")" || v == ","
}
