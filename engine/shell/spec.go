package shell

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// style says how a program's arguments are parsed.
type style uint8

const (
	styleGNU    style = iota // getopt_long with the spec's options
	styleGo                  // Go's flag package (go list -f ...)
	styleAny                 // any arguments: the program has no harmful option
	styleCustom              // check does all the parsing
	styleSub                 // global options, then a subcommand from subs
)

// readMode says which operands a program reads as files.
type readMode uint8

const (
	readNone   readMode = iota
	readAll             // every operand is a file whose content is read
	readCustom          // check sets the files read
)

// spec describes how a read-only program may be used.
type spec struct {
	names string // space-separated names sharing the spec
	style style
	// opts lists the allowed options (see optset). Anything else rejects.
	opts string
	// writeOpts lists options that name an output file; they are not
	// allowed, and are listed only to report the file in Analysis.Writes.
	writeOpts string
	// ops bounds the operand count: "" any, "0", "1", "0-1", "2-" ...
	// When bounded, globs and run-time words (which may expand to any
	// number of words) are not allowed as operands.
	ops string
	// posix stops option parsing at the first operand.
	posix bool
	// safeOpts: no option of the real program reads or writes a file,
	// runs anything or changes what is read (grep -r and -f, wc
	// --files0-from, hexdump -f do), so a word that may expand to an
	// option at run time (a leading glob, $VAR, what xargs supplies) is
	// acceptable where options are read. Without it such a word must
	// come after "--" (runtimeOptions).
	safeOpts bool
	// dyn: any operand value is harmless (the program does not read file
	// contents from operands), so run-time words ($VAR, $(..), xargs
	// input) are acceptable as operands.
	dyn bool
	// ownDyn: check judges run-time words itself (printf: only the format
	// must be static).
	ownDyn bool
	reads  readMode
	// exact lists the only accepted argument lists, "|"-separated, each
	// space-separated: "--version|-v".
	exact string
	// enums lists options whose value is a keyword, with the values
	// accepted, exactly: "d,directories=read|skip D=read". GNU programs
	// match such values with argmatch, which takes any unambiguous
	// abbreviation (grep -d rec is -d recurse), and some compare them
	// ignoring case: any value not listed is refused.
	enums string
	// subs maps subcommand names to their specs (styleSub).
	subs map[string]*spec
	// toolchain names the family of files (a ToolchainFamily) that, in
	// the directory the program runs in or above it, can make it fetch or
	// run another toolchain (go.mod's toolchain line, rust-toolchain.toml,
	// a version manager's file): the analysis reports the program in
	// Analysis.Toolchains for the engine to judge those files, since the
	// shell analysis reads no file.
	toolchain ToolchainFamily
	// check adds program-specific validation; it returns a reason to
	// reject, or "".
	check func(*invocation) string

	o, wo          *optset
	minOps, maxOps int // maxOps < 0: unbounded
	enumVals       map[string][]string
}

// compile prepares a spec's option sets and operand bounds.
func (sp *spec) compile() {
	sp.o = compileOpts(sp.opts, sp.style == styleGo)
	if sp.writeOpts != "" {
		sp.wo = compileOpts(sp.writeOpts, sp.style == styleGo)
	}
	sp.minOps, sp.maxOps = 0, -1
	if sp.ops != "" {
		lo, hi, rng := strings.Cut(sp.ops, "-")
		var err error
		if sp.minOps, err = strconv.Atoi(lo); err != nil {
			panic("shell: bad ops " + sp.ops)
		}
		switch {
		case !rng:
			sp.maxOps = sp.minOps
		case hi != "":
			if sp.maxOps, err = strconv.Atoi(hi); err != nil {
				panic("shell: bad ops " + sp.ops)
			}
		}
	}
	for _, e := range strings.Fields(sp.enums) {
		names, vals, ok := strings.Cut(e, "=")
		if !ok || names == "" || vals == "" {
			panic("shell: bad enums " + sp.enums)
		}
		if sp.enumVals == nil {
			sp.enumVals = map[string][]string{}
		}
		for _, n := range strings.Split(names, ",") {
			if !sp.o.known(n) {
				panic("shell: enum for unknown option " + n + " of " + sp.names)
			}
			sp.enumVals[n] = strings.Split(vals, "|")
		}
	}
	for _, sub := range sp.subs {
		sub.compile()
	}
}

// invCtx is what a wrapper tells the command it runs.
type invCtx struct {
	// implicit: xargs appends operands read from stdin.
	implicit bool
	// pathOK: the words xargs supplies are file paths printed by a path
	// lister (find, git ls-files, ...) under static roots.
	pathOK bool
	// contentOK: those paths are named by find -name patterns that pick
	// no secret file, so a program may also print what is in them, once
	// trees, find's start points, are judged (run adds them).
	contentOK bool
	trees     []Tree
	// listsDirs: find may list directories and links too (no -type f):
	// a program that reads them recursively reads what the trees'
	// names do not keep.
	listsDirs bool
	// split: xargs splits those paths at blanks; the trees' names are
	// judged for it (Tree.SplitSafe), which dashFree then rests on.
	split bool
	// dashFree: the words xargs supplies never start with "-": paths
	// find prints, each starting with one of its start points, read
	// whole by xargs -0. Names git ls-files, rg --files or grep -l
	// print may start with "-", and xargs without -0 splits names at
	// blanks.
	dashFree bool
	// found: words marked xargs are the paths find hands to -exec: under
	// its start points, never starting with "-", their content judged
	// by the start points' trees.
	found bool
	// recursive is set when a program searched such a word recursively
	// (grep -r {}): what it reads is not only the files find matched.
	recursive bool
}

// invocation is one program run being judged.
type invocation struct {
	a     *analyzer
	sp    *spec
	name  string     // program name for messages ("git log")
	args  []wordInfo // arguments after the program name
	sc    *scope
	sx    *stmtCtx
	ic    *invCtx
	pa    parsedArgs
	files []wordInfo // operands read as files (readCustom)
	// outer is the invocation whose subcommand this is (git for git
	// grep), with its global options.
	outer *invocation
}

func (iv *invocation) failf(format string, args ...any) string {
	return iv.name + ": " + fmt.Sprintf(format, args...)
}

// run judges the invocation and returns a reason to reject, or "".
func (iv *invocation) run() string {
	sp := iv.sp
	if sp.toolchain != "" {
		if why := iv.a.toolchain(sp.toolchain, iv.name, iv.sc); why != "" {
			return why
		}
	}
	for i := range iv.args {
		w := &iv.args[i]
		switch {
		case w.brace:
			return iv.failf("brace expansion %s", w.val)
		case iv.sc.zsh && w.glob:
			return iv.failf("glob %s in a zsh payload", w.val)
		case w.dyn && !w.pipe && !sp.dyn && !sp.ownDyn && !(w.xargs && (iv.ic.found || iv.ic.pathOK && (sp.reads == readNone || iv.ic.contentOK))):
			return iv.failf("argument %s is only known at run time", w.val)
		}
	}
	// Listed paths are fine for a program that does not print what is in
	// them: find . | xargs cat prints every file, .env included.
	if iv.ic.implicit && !sp.dyn && !sp.ownDyn && !(iv.ic.pathOK && (sp.reads == readNone || iv.ic.contentOK)) {
		return iv.failf("xargs supplies arguments only known at run time")
	}
	// A program that takes any word still reads the names xargs appends
	// (ls and du list them, wc and md5sum read them): they are judged
	// only as a path lister's output, whose roots are read targets.
	if iv.ic.implicit && sp.reads != readNone && !iv.ic.pathOK {
		return iv.failf("xargs supplies names it reads, which are only known at run time")
	}
	switch sp.style {
	case styleAny, styleCustom:
		if why := iv.runtimeOptions(false); why != "" {
			return why
		}
	case styleSub:
		return iv.runSub()
	default:
		if sp.exact != "" {
			if iv.ic.implicit || !matchExact(sp.exact, iv.args) {
				return iv.failf("only %q is allowed", strings.ReplaceAll(sp.exact, "|", `" or "`))
			}
			return ""
		}
		var pe *parseError
		if sp.style == styleGo {
			iv.pa, pe = parseGoFlags(sp.o, iv.args)
		} else {
			iv.pa, pe = parseGNU(sp.o, sp.wo, iv.args, sp.posix, sp.safeOpts)
		}
		if pe != nil {
			if pe.write != "" && pe.write != "/dev/null" {
				iv.a.out.Writes = append(iv.a.out.Writes, iv.sc.paths(pe.write)...)
			}
			return iv.name + ": " + pe.why
		}
		if why := iv.checkOps(); why != "" {
			return why
		}
		if why := iv.checkEnums(); why != "" {
			return why
		}
		if why := iv.runtimeOptions(true); why != "" {
			return why
		}
	}
	if sp.check != nil {
		if why := sp.check(iv); why != "" {
			return why
		}
	}
	if sp.reads == readAll {
		iv.files = iv.pa.ops
	}
	if iv.ic.contentOK && (sp.reads != readNone && !sp.dyn && !sp.ownDyn || iv.ic.split) {
		if iv.ic.listsDirs && iv.ic.recursive {
			return iv.failf("reads recursively what find lists, directories included")
		}
		// The program prints what is in the files find listed.
		iv.a.out.Trees = append(iv.a.out.Trees, iv.ic.trees...)
		iv.ic.trees = nil
	}
	if (iv.ic.found || iv.ic.pathOK) && !sp.dyn && !sp.ownDyn {
		// A path find or xargs hands over is harmless only where the
		// program reads a file: as sed's script, jq's filter, a pattern
		// or an option's value it is code or data from a file name.
		for _, w := range iv.args {
			if w.xargs && !slices.ContainsFunc(iv.files, func(f wordInfo) bool { return f.xargs && f.pos == w.pos }) {
				return iv.failf("%s stands for a found file where the program does not read a file", w.val)
			}
		}
	}
	switch sp.reads {
	case readAll, readCustom:
		for _, f := range iv.files {
			switch {
			case f.pipe || f.val == "-" && !f.dyn:
				continue
			case f.xargs && (iv.ic.pathOK || iv.ic.found):
				continue // the lister's roots are read targets themselves
			case f.dyn:
				// Read targets are judged against the read roots: one
				// known only at run time cannot be.
				return iv.failf("reads %s, a path known only at run time", f.val)
			}
			iv.a.out.Reads = append(iv.a.out.Reads, iv.sc.paths(f.val)...)
			if why := iv.a.readPath(f.val, f.glob, iv.sc); why != "" {
				return iv.failf("%s", why)
			}
		}
	}
	return ""
}

// runtimeOptions refuses, for a program with a harmful option (not
// safeOpts), a word known only at run time that it may read as an
// option: its value may start with "-" (wc --files0-from=.env from xargs
// printed .env). A word is no option when it comes where the program
// reads operands only (after "--", or after a static operand for a
// program whose options end there), when it is an option's value and
// cannot split into several words, or when it is a path find supplies
// (find -exec, or find's output read by xargs -0), which starts with a
// start point. parsed says whether iv.pa holds the parse.
func (iv *invocation) runtimeOptions(parsed bool) string {
	if iv.sp.safeOpts || iv.sp.ownDyn {
		return ""
	}
	dashFree := iv.ic.found || iv.ic.dashFree
	for _, w := range iv.args {
		if !w.dyn || w.pipe || w.xargs && dashFree {
			continue
		}
		if parsed {
			k := slices.IndexFunc(iv.pa.ops, func(o wordInfo) bool { return o.pos == w.pos && o.end == w.end })
			if k >= 0 && iv.pa.optsEnd >= 0 && k >= iv.pa.optsEnd || k < 0 && !w.split {
				continue
			}
		}
		return iv.failf("%s is known only at run time and may be an option; put it after --", w.val)
	}
	if iv.ic.implicit && !dashFree && !(parsed && iv.pa.optsEnd >= 0) {
		return iv.failf("xargs supplies words that may be options; put -- before them, or list paths with find ... -print0 into xargs -0")
	}
	return ""
}

// checkEnums refuses keyword values not listed exactly (spec.enums).
func (iv *invocation) checkEnums() string {
	for _, o := range iv.pa.opts {
		vals, ok := iv.sp.enumVals[o.name]
		if !ok || !o.has {
			continue
		}
		if o.glob || !slices.Contains(vals, o.val) {
			return iv.failf("%s is not one of the values %s accepts as spelled (%s)", o.val, optName(o.name), strings.Join(vals, ", "))
		}
	}
	return ""
}

// optName spells an option name as written: -d, --directories.
func optName(n string) string {
	if len(n) == 1 {
		return "-" + n
	}
	return "--" + n
}

// checkOps enforces the operand count.
func (iv *invocation) checkOps() string {
	sp := iv.sp
	n := len(iv.pa.ops)
	if sp.maxOps >= 0 {
		if iv.ic.implicit {
			return iv.failf("xargs may add operands")
		}
		for _, w := range iv.pa.ops {
			if (w.dyn && !w.pipe) || w.glob {
				return iv.failf("operand %s may expand to several words", w.val)
			}
		}
		if n > sp.maxOps {
			return iv.failf("at most %d operand(s) allowed", sp.maxOps)
		}
	}
	if n < sp.minOps && !iv.ic.implicit {
		return iv.failf("needs %d operand(s)", sp.minOps)
	}
	return ""
}

// runSub parses global options, then judges the subcommand.
func (iv *invocation) runSub() string {
	sp := iv.sp
	pa, pe := parseGNU(sp.o, sp.wo, iv.args, true, false)
	if pe != nil {
		return iv.name + ": " + pe.why
	}
	iv.pa = pa
	if len(pa.ops) == 0 {
		if sp.check != nil {
			return sp.check(iv)
		}
		return iv.failf("needs a subcommand")
	}
	subw := pa.ops[0]
	if subw.dyn {
		return iv.failf("subcommand is only known at run time")
	}
	sub := sp.subs[subw.val]
	if sub == nil {
		return iv.failf("%s is not a known read-only subcommand", subw.val)
	}
	inner := &invocation{a: iv.a, sp: sub, name: iv.name + " " + subw.val, args: pa.ops[1:], sc: iv.sc, sx: iv.sx, ic: iv.ic, outer: iv}
	return inner.run()
}

// matchExact reports whether args are exactly one of the alternatives.
func matchExact(alts string, args []wordInfo) bool {
	for _, alt := range strings.Split(alts, "|") {
		want := strings.Fields(alt)
		if len(want) != len(args) {
			continue
		}
		ok := true
		for i := range want {
			if !args[i].is(want[i]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// programs maps a program name to its spec; built from programTable.
var programs = map[string]*spec{}

func init() {
	for _, sp := range programTable {
		sp.compile()
		for _, n := range strings.Fields(sp.names) {
			if programs[n] != nil {
				panic("shell: duplicate program " + n)
			}
			programs[n] = sp
		}
	}
}

// trustedDirs are the directories from which a program given by path is
// taken to be the system program of that name. ./ls or /tmp/git may be
// anything.
var trustedDirs = map[string]bool{
	"/bin": true, "/usr/bin": true, "/usr/local/bin": true,
	"/sbin": true, "/usr/sbin": true, "/usr/local/sbin": true,
	"/opt/homebrew/bin": true,
}

// progName normalizes a command word to a program name, or says why the
// word cannot be judged.
func progName(w *wordInfo) (string, string) {
	switch {
	case w.dyn:
		return w.val, "command name " + w.val + " is only known at run time"
	case w.brace:
		return w.val, "brace expansion in command name " + w.val
	case w.glob && w.val != "[":
		return w.val, "glob in command name " + w.val
	case w.val == "":
		return w.val, "empty command name"
	}
	v := w.val
	if strings.Contains(v, "/") {
		dir, base := path.Split(v)
		if !trustedDirs[path.Clean(dir)] {
			return base, "program " + v + " is outside the system directories"
		}
		v = base
	}
	return v, ""
}
