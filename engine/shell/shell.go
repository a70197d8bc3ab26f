// Package shell decides whether a shell command line that an agent wants to
// run is known to be read-only, so that toolgate can allow it locally instead
// of asking a model.
//
// The analysis is an allowlist: a line is read-only only when it parses as
// bash and every simple command in it (across lists, pipelines, compound
// commands, substitutions and unwrapped wrappers such as timeout, xargs or
// bash -c) is a program from the table in programs.go used with options the
// table allows, with no redirection that writes. Anything the analysis does
// not understand makes the line not read-only: a wrong "read-only" lets an
// agent do damage unattended, a wrong "not read-only" only costs a model call.
//
// Decisions the package makes, in brief (details at the code that makes them):
//   - A word whose value is computed at run time ($VAR, $(..), `..`) is
//     "dynamic". It is never allowed as a program name, and as an argument
//     only for programs whose every option and operand is harmless whatever
//     its value (echo, ls, wc, ...): a dynamic word may expand to an option
//     or name a credential store. A lone process substitution <(..) is
//     treated as a pipe path, not as a dynamic value.
//   - Globs (*.go) are static text, but a glob with no static text before
//     its first metacharacter may expand to a file name starting with '-',
//     so it is allowed before "--" only for programs none of whose options
//     is harmful. Brace expansion ({a,b}) is rejected: it turns one word into
//     several, which defeats option checks.
//   - VAR=value prefixes, env with assignments or options, sudo, functions,
//     eval, source, declarations, let and ((..)) are never read-only.
//     for/while/if/case are judged by their parts; read with plain
//     variable names is allowed so that "while read l" loops are. A plain
//     assignment (base="${f%.png}") is, in bash, to a lower-case name no
//     shell or program reads, from a value whose expansions are proven;
//     the statements that surely run after it may expand the name.
//   - Arithmetic is allowed on number literals only, and [[ ]] and test
//     without -eq-style comparisons on run-time values or -v/-R: variable
//     values evaluated as arithmetic can run command substitutions.
//   - xargs: the command must accept any argument, unless stdin is piped from
//     a path lister (find, git ls-files, rg -l/--files, grep -l) under static
//     roots that do not reach a credential store, and the command's options
//     are all harmless (find . -print0 | xargs -0 grep foo). A command that
//     prints the files' content needs find -type f -name GLOB -print0 and
//     xargs -0; find's start points are then trees (Analysis.Trees).
//   - find -exec and -execdir may run a program on disk that reads, lists
//     or names files (findExecPrograms), judged like any command, with
//     each {} a path find found, accepted only where the program reads a
//     file; when it reads them, find's start points are trees.
//   - bash -c payloads are parsed recursively up to maxDepth levels; sh,
//     dash and zsh payloads also reject syntax those shells read otherwise
//     ($'..', <<<, process substitution; globs in zsh).
//   - The work per line is bounded (nesting.go): before parsing, a scan
//     without recursion bounds the nesting (100 levels), the words (10,000
//     with the bash -c payloads) and the here-documents (32); after it,
//     the tree's depth and the command text produced. A line past a bound
//     is not read-only and counts as one that did not parse (ParseErr is
//     a *LimitError); AnalyzeContext also stops when its context ends.
//   - nohup is read-only only when its output is redirected or piped (it
//     creates nohup.out when writing to a terminal).
//   - Reading a credential store (see IsCredentialPath) is not read-only, nor
//     is a recursive read (grep -r, rg, diff -r) of a home directory or a
//     directory above one. cd to a static directory is followed, so later
//     relative reads are checked where they land; after a cd whose target is
//     known only at run time, relative reads are not read-only. Listing names
//     (ls, find) is allowed except inside credential directories.
//   - Programs given by path count only from system directories (/bin,
//     /usr/bin, ...): ./ls or /tmp/git may be anything.
//
// Caveats: the analysis assumes bash runs the line, with the user's PATH,
// environment and shell state (aliases and functions are not expanded in
// non-interactive bash). Programs honor their own configuration: git runs
// programs named in a repository's config (core.fsmonitor, diff.external,
// filters) even for read commands, and the go command may download a
// toolchain that go.mod names (see Toolchains). Paths
// are checked as written: a symlink to a credential store, or a relative
// path when the agent's starting directory is a home directory, is not
// detected.
package shell

import (
	"context"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Command is one simple command found in the line, after unwrapping
// wrappers (timeout, nice, xargs, env, command, exec, bash -c ...), so that
// rules can match on what actually runs.
type Command struct {
	// Env holds VAR=value prefixes (and env's assignments), as written.
	Env []string
	// Argv holds the words with quotes removed. Argv[0] is normalized: the
	// basename of a path (/bin/rm -> rm) with quotes and backslashes removed.
	// A word whose value is not static is kept as written and Dynamic is set.
	// Globs (*.go) and a leading ~ are kept as written: they are static text.
	Argv []string
	// Text is the command's source text without env prefixes or the
	// wrappers that were unwrapped, e.g. "git diff --stat".
	Text string
	// Dynamic reports that some word's value is only known at run time
	// ($VAR, $(..), `..`, <(..), or an argument xargs substitutes).
	Dynamic bool
}

// GitScope is how far back a git command's output may reach for the
// content of files.
type GitScope int

const (
	// GitNoContent: names, hashes and messages only.
	GitNoContent GitScope = iota
	// GitNamed: the content of the objects its operands name when they
	// are files' contents (git show BLOB prints it, --stat or not).
	GitNamed
	// GitIndex: the content of files the index tracks (a diff of the
	// working tree, a search of tracked files).
	GitIndex
	// GitHistory: the content of files in any commit it can reach.
	GitHistory
)

// Git is what one git command may print beyond the files it names.
type Git struct {
	Scope GitScope
	// Names are the operands that may name objects (revisions, maybe
	// abbreviated hashes), for the engine to find what they reach.
	Names []string
	// Pathspecs limit the files whose content is printed to those below
	// them (literal paths after "--"); nil means no limit.
	Pathspecs []string
	// FoldPathspecs: the pathspecs match regardless of case
	// (--icase-pathspecs).
	FoldPathspecs bool
	// RefObjects is set when the command prints the objects refs name
	// (%(raw), %(contents)), which may be files' contents.
	RefObjects bool
	// Remotes is set when the command prints remote URLs.
	Remotes bool
	// Recurses is set when the command runs git in the submodules'
	// repositories (status and diff of the working tree do).
	Recurses bool
}

// Tree is a directory a recursive search reads, as written (relative to
// where the command runs).
type Tree struct {
	Path string
	// Hidden is set when the search includes hidden files and directories
	// (grep -r, rg --hidden or -uu, diff -r); ripgrep's default skips them.
	Hidden bool
	// Follow is set when the search follows symbolic links below the root
	// (grep -R, rg -L, diff -r), which may lead anywhere, or reads the
	// files they name (what find hands to -exec).
	Follow bool
	// SplitSafe: the names found reach their reader through xargs
	// without -0: none below the root may hold a blank, a quote or a
	// backslash, which would make other names of it.
	SplitSafe bool
	// FollowNamed narrows Follow to the links whose names pass Names:
	// find without -L enters no linked directory, and hands the links it
	// keeps to -exec, which reads through them. Ignoring it judges more.
	FollowNamed bool
	// SkipDirs are globs of directory names the search does not enter
	// (grep --exclude-dir, rg -g '!name'), as the program matches them:
	// fnmatch(3) without flags on the base name (knowledge.NameMatch).
	// The root itself is never skipped. Ignoring them judges more.
	SkipDirs []string
	// Names, when set, are globs of file names, also in fnmatch's reading:
	// the search reads only files whose name matches one of them (grep
	// --include, find -name before -exec or -print0). Directories are
	// entered whatever their name. Ignoring them judges more.
	Names []string
	// OneLevel is set when the program reads the files directly in the
	// directory, not below its subdirectories (diff of two directories
	// without -r). Ignoring it judges more.
	OneLevel bool
}

// Analysis is the verdict on one command line.
type Analysis struct {
	// ReadOnly is true when the line parsed and every simple command is a
	// known read-only program used with read-only options, and nothing
	// writes.
	ReadOnly bool
	// Reason says why the line is not read-only (the first problem found);
	// it is "" when ReadOnly.
	Reason string
	// Commands lists every simple command in source order, including those
	// inside substitutions and unwrapped wrapper payloads (bash -c '...' is
	// parsed recursively). It is empty when the line does not parse.
	Commands []Command
	// Reads lists file paths that known readers read (cat FILE, grep PAT
	// FILE, < FILE ...), quotes removed.
	Reads []string
	// Trees lists the directories that recursive content searches read
	// (grep -r, rg, diff -r): a search prints the secret files below them
	// unless it skips them, so the engine looks at what is there.
	Trees []Tree
	// Toolchains lists the programs run whose behaviour the files where
	// they run can turn into fetching or running another toolchain (the
	// go command and go.mod's toolchain line, rustup's proxies and
	// rust-toolchain.toml, ...). ReadOnly assumes those files ask for
	// nothing: the engine, which reads files, judges them.
	Toolchains []Toolchain
	// Writes lists files that the line writes (> FILE, >> FILE, &> FILE,
	// tee FILE, sort -o FILE ...), quotes removed; /dev/null is left out.
	Writes []string
	// Git lists what each git command may print that its operands do not
	// name (the files its index and history hold, remote URLs), for the
	// engine to check in the repository git uses.
	Git []Git
	// ParseErr is non-nil when the line does not parse as bash, or is not
	// analysed to the end because it exceeds a bound on the analysis's
	// work (a *LimitError, see nesting.go): rules then treat it as a line
	// that did not parse. Commands, Reads and Writes hold what was found
	// before a bound was met.
	ParseErr error
}

// maxDepth bounds how deeply bash -c payloads are parsed; deeper nesting is
// not read-only. It keeps hostile input from costing unbounded work.
const maxDepth = 3

// parsers reuses parsers across calls: syntax.Parser is not safe for
// concurrent use, and allocating one per call costs more than the parse of a
// short line.
var parsers = sync.Pool{New: func() any {
	return syntax.NewParser(syntax.Variant(syntax.LangBash))
}}

// parse parses src as bash. The caller must call release when done with the
// tree, since a pooled parser may reuse its memory.
func parse(src string) (f *syntax.File, release func(), err error) {
	p := parsers.Get().(*syntax.Parser)
	f, err = p.Parse(strings.NewReader(src), "")
	return f, func() { parsers.Put(p) }, err
}

// Analyze parses line as bash and reports whether it is known to be
// read-only, with the commands, reads and writes it found. It is safe for
// concurrent use.
func Analyze(line string) Analysis {
	return AnalyzeContext(context.Background(), line)
}

// AnalyzeContext is Analyze, stopping soon after ctx ends: the line is
// then not read-only, and ParseErr is a *LimitError.
func AnalyzeContext(ctx context.Context, line string) Analysis {
	var res Analysis
	a := analyzer{out: &res, ctx: ctx}
	switch {
	case strings.TrimSpace(line) == "":
		a.fail("empty command")
		return res
	case strings.IndexByte(line, 0) >= 0:
		// bash and the parser disagree on NUL bytes.
		a.fail("command contains a NUL byte")
		return res
	case strings.IndexByte(line, '\r') >= 0:
		// The parser reads a carriage return as a blank; bash reads it
		// as part of a word.
		a.fail("command contains a carriage return")
		return res
	}
	if hasNetDevice(line) {
		a.fail("uses /dev/tcp or /dev/udp")
	}
	a.wordsLeft = maxWords
	f, release, err := parseBounded(line, &a.wordsLeft)
	defer release()
	if err != nil {
		res.ParseErr = err
		res.Reason = ""
		if le, ok := err.(*LimitError); ok {
			a.fail(le.Reason)
		} else {
			a.fail("does not parse as bash: " + err.Error())
		}
		return res
	}
	a.textLeft = 4*len(line) + maxTextSlack
	a.agree(line, f)
	sc := &scope{src: line, textLeft: &a.textLeft}
	a.prescan(f, sc)
	a.stmts(f.Stmts, sc, stmtCtx{})
	a.spent()
	if a.judged == 0 {
		a.fail("no command")
	}
	res.ReadOnly = res.Reason == ""
	return res
}

// hasNetDevice reports whether s names bash's network pseudo-devices, which
// turn a redirection into a network connection.
func hasNetDevice(s string) bool {
	return strings.Contains(s, "/dev/tcp") || strings.Contains(s, "/dev/udp")
}
