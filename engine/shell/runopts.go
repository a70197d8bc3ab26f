package shell

import (
	"fmt"
	"strings"
)

// Options that make a program run another program: one named on its
// command line (sort --compress-program=PROG, npm --script-shell=PROG,
// rg --pre PROG) or one its configuration names (git --ext-diff runs
// diff.external, --textconv a textconv driver). The read-only table never
// lists them; RunsProgram reports them as a fact for commands the table
// does not vouch for, which a user's allow rule may still cover
// ("Bash(git diff *)"): such a rule vouches for the command the user had
// in mind, not for a program of the caller's choosing.

// RunsProgram says why the command may run a program its words or its
// configuration choose, beyond the program itself: an option that names
// or turns on such a program (by the program's row in runTable, or by
// its name: --exec, --pager, --shell, --editor, --plugin, ...), a word
// known only at run time (it may be such an option), or an assignment
// before the command that is not known to be inert (GIT_EXTERNAL_DIFF,
// npm_config_script_shell, LD_PRELOAD...). "" when none is found.
func RunsProgram(c Command) string {
	for _, e := range c.Env {
		name, _, _ := strings.Cut(e, "=")
		if !inertVar(name) {
			return fmt.Sprintf("sets %s, which may make the command run another program", name)
		}
	}
	if c.Dynamic {
		return "a word known only at run time may be an option that runs another program"
	}
	if len(c.Argv) == 0 {
		return ""
	}
	prog, args := c.Argv[0], c.Argv[1:]
	if strings.HasPrefix(prog, "python") && len(args) > 1 && args[0] == "-m" {
		prog, args = args[1], args[2:] // python -m pytest: pytest's options
	}
	if prog == "git" {
		if why := gitRunsProgram(args); why != "" {
			return why
		}
	}
	row := rowFor(prog)
	sub := firstOperand(args)
	for i, w := range args {
		if why := row.match(prog, sub, w, args[i+1:]); why != "" {
			return why
		}
		if name, ok := optionName(w); ok && runsByName(name) {
			return fmt.Sprintf("%s: option %s may run another program", prog, w)
		}
	}
	return ""
}

// runRow is what makes one program run others, beyond the options whose
// names say so (runsByName).
type runRow struct {
	// long are long options (without dashes, '_' read as '-'), matched
	// with or without "=value"; single are single-dash long options
	// (find -exec, gcc -fplugin=), matched as a prefix of the word.
	long, single []string
	// abbrev: the program takes any prefix of a long option (getopt_long,
	// argp, nopt), so a prefix of two letters or more of one in long
	// counts, unless it is exactly one of exact, other options the
	// parser would pick first.
	abbrev bool
	exact  []string
	// short are short option letters; cluster says they may be bundled
	// (-avze), else only the word's first letter counts. In a bundle,
	// a letter of takes (an option with a value) ends it: the rest of
	// the word is that value.
	short, takes string
	cluster      bool
	// inert says an option of short or long (its letter or full name)
	// with this value runs nothing (pytest -p no:NAME).
	inert func(opt, value string) bool
	// words are prefixes of any argument (less +!cmd, gcc @FILE).
	words []string
	// vars are make variables whose assignment on the command line, by
	// any operator, picks the shell or options (makeAssignRuns).
	vars []string
	// more are the row's own spellings (gcc -Wl,-plugin,SO).
	more func(w string, rest []string) bool
	// subs limits the options to these subcommands (the first operand).
	subs []string
	why  string
}

// runTable lists programs with options that run another program and
// whose names do not say so. Launchers that run any command anyway
// (interpreters, shells, docker) are the allow rules' danger probes.
var runTable = []struct {
	names []string
	row   runRow
}{
	{[]string{"npm", "npx", "pnpm", "pnpx", "yarn", "bun", "bunx"}, runRow{
		// npm reads any --key=value as configuration: these keys name
		// programs, code to load, or files of configuration that may.
		// nopt takes abbreviations (--script-sh).
		long: []string{"script-shell", "shell", "node-options", "userconfig", "globalconfig", "git", "call", "init-module",
			"onload-script", "editor", "browser", "viewer", "sign-git-commit", "sign-git-tag"},
		abbrev: true, exact: []string{"global", "user"},
		short: "c", why: "names a program, code to load or configuration that does"}},
	{[]string{"rg"}, runRow{long: []string{"pre", "hostname-bin"}, why: "runs a program on each file or for the host name"}},
	{[]string{"sort", "gsort"}, runRow{long: []string{"compress-program"}, abbrev: true, why: "runs the compressor it names"}},
	{[]string{"go"}, runRow{single: []string{"-exec", "-toolexec", "-vettool"}, why: "runs the program it names"}},
	{[]string{"diff", "sdiff", "diff3"}, runRow{long: []string{"diff-program"}, abbrev: true, why: "runs the program it names"}},
	{[]string{"tar", "gtar", "bsdtar"}, runRow{long: []string{"use-compress-program", "to-command", "checkpoint-action", "info-script",
		"new-volume-script", "rsh-command", "rmt-command"}, abbrev: true, exact: []string{"checkpoint"}, short: "IF", cluster: true,
		why: "runs a compressor, script or command it names"}},
	{[]string{"find"}, runRow{single: []string{"-exec", "-ok"}, why: "runs a command on what it finds"}},
	{[]string{"man"}, runRow{long: []string{"pager", "html"}, abbrev: true, short: "PH", cluster: true, why: "runs a pager or browser it names"}},
	{[]string{"less", "more", "most"}, runRow{words: []string{"+"}, why: "runs commands given with +"}},
	{[]string{"rsync"}, runRow{long: []string{"rsh", "rsync-path"}, short: "e", cluster: true, why: "runs a remote shell it names"}},
	{[]string{"scp", "sftp", "ssh"}, runRow{short: "SoF", cluster: true, why: "runs a program or proxy command it names, or a configuration file that may"}},
	{[]string{"zip"}, runRow{single: []string{"-TT"}, why: "runs a test command it names"}},
	// pytest: -p loads a plugin; -o addopts=, and a configuration file
	// (-c), add any option, -p too. argparse bundles short options and
	// takes prefixes of long ones (--co is --collect-only, --pdb its own).
	{[]string{"pytest", "py.test"}, runRow{long: []string{"pdbcls", "override-ini", "config-file"}, abbrev: true, exact: []string{"pdb", "co"},
		short: "poc", takes: "kmrWn", cluster: true, inert: pytestInert, why: "loads a plugin or debugger, or options that may"}},
	{[]string{"cargo"}, runRow{long: []string{"config"}, why: "sets configuration, which names runners and wrappers"}},
	// Compilers: programs (-B, -wrapper, a linker by path), plugins of the
	// compiler or the linker, and options read from files (@FILE, clang
	// --config), which may hold any of them.
	{[]string{"gcc", "g++", "cc", "c++", "clang", "clang++"}, runRow{single: []string{"-B", "-fplugin", "-fpass-plugin", "-specs", "--specs",
		"-wrapper", "--config", "--ld-path"}, words: []string{"@"}, more: compilerRuns,
		why: "runs programs or plugins it names, or reads options from a file"}},
	{[]string{"ld", "ld.bfd", "ld.gold", "ld.lld", "lld", "gold", "mold"}, runRow{long: []string{"plugin"}, words: []string{"@"},
		more: func(w string, _ []string) bool { return linkerRuns(w) }, why: "loads a plugin or reads options from a file"}},
	// make: a command-line assignment by any operator sets the recipe
	// shell or make's options; --eval (-E) is makefile text, which may
	// set them or call $(shell).
	{[]string{"make", "gmake"}, runRow{long: []string{"eval"}, abbrev: true, short: "E", takes: "CfIjlEoOW", cluster: true,
		vars: []string{"SHELL", ".SHELLFLAGS", "MAKESHELL", "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "MAKE"},
		why:  "runs its recipes with a shell, options or makefile text it names"}},
}

var runRows = func() map[string]*runRow {
	m := map[string]*runRow{}
	for i := range runTable {
		for _, n := range runTable[i].names {
			m[n] = &runTable[i].row
		}
	}
	return m
}()

// rowFor is prog's row; a versioned name (gcc-13, clang-17) is its
// program's.
func rowFor(prog string) *runRow {
	if r := runRows[prog]; r != nil {
		return r
	}
	base := strings.TrimRight(prog, "0123456789.")
	if b, ok := strings.CutSuffix(base, "-"); ok && base != prog {
		return runRows[b]
	}
	return nil
}

// match says why the word w (followed by rest) of prog, whose first
// operand is sub, runs a program by the row.
func (r *runRow) match(prog, sub, w string, rest []string) string {
	if r == nil || len(r.subs) > 0 && !contains(r.subs, sub) {
		return ""
	}
	found := func() string { return fmt.Sprintf("%s: %s %s", prog, w, r.why) }
	for _, p := range r.words {
		if strings.HasPrefix(w, p) {
			return found()
		}
	}
	for _, s := range r.single {
		if strings.HasPrefix(w, s) {
			return found()
		}
	}
	if r.more != nil && r.more(w, rest) {
		return found()
	}
	if len(r.vars) > 0 && !strings.HasPrefix(w, "-") && makeAssignRuns(w, r.vars) {
		return found()
	}
	next := func(v string, glued bool) string {
		if !glued && len(rest) > 0 {
			return rest[0]
		}
		return v
	}
	if name, ok := strings.CutPrefix(w, "--"); ok {
		name, v, glued := strings.Cut(name, "=")
		opt := r.longOption(normOption(name))
		if opt == "" || r.inert != nil && r.inert(opt, next(v, glued)) {
			return ""
		}
		return found()
	}
	if len(w) < 2 || w[0] != '-' || r.short == "" {
		return ""
	}
	letters := w[1:2]
	if r.cluster {
		letters = w[1:]
	}
	for i := 0; i < len(letters); i++ {
		c := letters[i]
		if strings.IndexByte(r.short, c) >= 0 {
			v := letters[i+1:]
			if r.inert != nil && r.inert(string(c), next(v, v != "")) {
				return ""
			}
			return found()
		}
		if strings.IndexByte(r.takes, c) >= 0 {
			return "" // the rest is that option's value
		}
	}
	return ""
}

// longOption is the option of long that name spells, in full or, for a
// program that takes them, abbreviated; "" for none.
func (r *runRow) longOption(name string) string {
	if contains(r.long, name) {
		return name
	}
	if !r.abbrev || len(name) < 2 || contains(r.exact, name) {
		return ""
	}
	for _, l := range r.long {
		if strings.HasPrefix(l, name) {
			return l
		}
	}
	return ""
}

// makeAssignRuns says whether the make argument w is a variable
// assignment (NAME=, :=, ::=, :::=, ?=, +=, !=, blanks allowed) that
// runs a program: != runs its value as a shell command, and the names
// in vars pick the recipe shell or make's own options. A name with a
// reference ($) is known only when make expands it.
func makeAssignRuns(w string, vars []string) bool {
	lhs, _, ok := strings.Cut(w, "=")
	if !ok {
		return false
	}
	if strings.HasSuffix(lhs, "!") || strings.Contains(lhs, "$") {
		return true
	}
	name := strings.TrimRight(strings.TrimSpace(lhs), ":?+")
	return contains(vars, strings.TrimSpace(name))
}

// pytestInert: -p no:NAME turns a plugin off; -o sets an ini key, and
// only these keys, which name no plugin, options or code, are inert.
func pytestInert(opt, value string) bool {
	switch opt {
	case "p":
		return strings.HasPrefix(value, "no:")
	case "o", "override-ini":
		key, _, _ := strings.Cut(value, "=")
		return pytestInertKeys[strings.TrimSpace(key)]
	}
	return false
}

var pytestInertKeys = map[string]bool{
	"console_output_style": true, "log_cli": true, "log_cli_level": true, "log_level": true, "junit_family": true,
	"xfail_strict": true, "asyncio_mode": true, "timeout": true, "cache_dir": true, "verbosity_assertions": true,
}

// compilerRuns: options the compiler hands the linker (-Wl,OPTS and
// -Xlinker OPT) that load a plugin or read options from a file; clang
// -Xclang options that load a plugin; a linker named by path
// (-fuse-ld=./ld, where a plain name is looked up like any program).
func compilerRuns(w string, rest []string) bool {
	switch {
	case strings.HasPrefix(w, "-Wl,"):
		for _, o := range strings.Split(w[len("-Wl,"):], ",") {
			if linkerRuns(o) {
				return true
			}
		}
	case w == "-Xlinker" && len(rest) > 0:
		return linkerRuns(rest[0])
	case w == "-Xclang" && len(rest) > 0:
		o := strings.TrimLeft(rest[0], "-")
		return strings.HasPrefix(o, "load") || strings.Contains(o, "plugin")
	case strings.HasPrefix(w, "-fuse-ld="):
		return strings.Contains(w, "/")
	}
	return false
}

// linkerRuns says whether the linker option o loads a plugin (ld takes
// -plugin, --plugin and their prefixes, getopt_long_only) or reads
// options from a file (@FILE).
func linkerRuns(o string) bool {
	if strings.HasPrefix(o, "@") {
		return true
	}
	name, _, _ := strings.Cut(strings.TrimLeft(o, "-"), "=")
	return strings.HasPrefix(o, "-") && len(name) >= 2 && (strings.HasPrefix("plugin", name) || strings.HasPrefix(name, "plugin"))
}

// gitRunsProgram: git's global -c and --config-env set any key (pagers,
// diff drivers, fsmonitor); some subcommands always run a configured or
// named program; others do with the options listed here.
func gitRunsProgram(args []string) string {
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		a := args[i]
		switch {
		case a == "-c" || a == "--config-env" || strings.HasPrefix(a, "--config-env=") || strings.HasPrefix(a, "-c") && len(a) > 2,
			a == "--exec-path" || strings.HasPrefix(a, "--exec-path="):
			return fmt.Sprintf("git: %s sets configuration or the programs git runs", a)
		case a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--super-prefix" || a == "--list-cmds":
			i++ // its value
		}
	}
	if i >= len(args) {
		return ""
	}
	sub, rest := args[i], args[i+1:]
	if gitRunSubs[sub] {
		return fmt.Sprintf("git %s runs a program its configuration or options name", sub)
	}
	opts := gitRunOpts[sub]
	for _, w := range rest {
		if strings.Contains(w, "%G") {
			return fmt.Sprintf("git %s: %s asks for signature checks, which run gpg.program", sub, w)
		}
		name, long := strings.CutPrefix(w, "--")
		name, _, _ = strings.Cut(name, "=")
		switch {
		case long && contains(gitRunLong, name):
			return fmt.Sprintf("git %s: %s runs a program its configuration or options name", sub, w)
		case !long && len(w) > 1 && w[0] == '-' && opts != "" && strings.ContainsAny(w[1:], opts):
			return fmt.Sprintf("git %s: %s runs a program its configuration or options name", sub, w)
		case sub == "help" && (w == "-w" || w == "-i" || w == "-m" || long && (name == "web" || name == "info" || name == "man")):
			return fmt.Sprintf("git help %s runs a configured viewer", w)
		}
	}
	return ""
}

// gitRunSubs always run a program that configuration or options name.
var gitRunSubs = map[string]bool{
	"difftool": true, "mergetool": true, "instaweb": true, "web--browse": true, "filter-branch": true,
	"send-email": true, "verify-commit": true, "verify-tag": true, "bisect": true, "submodule": true,
}

// gitRunLong are git long options that run a configured or named
// program: external diff and textconv drivers, filters, the remote's
// upload or receive program, gpg for signing and verifying, a template
// directory's hooks, a pager for grep.
var gitRunLong = []string{
	"ext-diff", "textconv", "filters", "upload-pack", "receive-pack", "exec", "extcmd", "tool",
	"show-signature", "gpg-sign", "sign", "signed", "verify-signatures", "local-user", "template",
	"open-files-in-pager", "config",
}

// gitRunOpts are the short options that do so, by subcommand.
var gitRunOpts = map[string]string{
	"grep": "O", "rebase": "xS", "clone": "uc", "commit": "S", "merge": "S", "revert": "S",
	"cherry-pick": "S", "am": "S", "commit-tree": "S", "pull": "S", "tag": "suv",
}

// runsByName reports whether a long option's name says it names a
// program or code to run: any program with such an option is treated
// alike, listed or not. Options that turn something off are not.
func runsByName(name string) bool {
	parts := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	if len(parts) == 0 || negations[parts[0]] {
		return false
	}
	for _, p := range parts {
		if runWords[p] {
			return true
		}
	}
	return false
}

var (
	runWords = map[string]bool{
		"exec": true, "execdir": true, "command": true, "commands": true, "cmd": true, "program": true, "prog": true,
		"shell": true, "pager": true, "editor": true, "wrapper": true, "interpreter": true, "runner": true,
		"launcher": true, "hook": true, "hooks": true, "plugin": true, "plugins": true, "loader": true,
		"require": true, "preload": true, "toolexec": true, "vettool": true, "textconv": true,
		"askpass": true, "helper": true, "script": true, "preprocessor": true,
	}
	negations = map[string]bool{"no": true, "without": true, "disable": true, "skip": true, "ignore": true}
)

// optionName returns the name of an option word (without dashes and
// value), or false for an operand. A single-dash word is a name too
// (find -exec, go -toolexec); a cluster of short letters names nothing
// runsByName knows.
func optionName(w string) (string, bool) {
	if len(w) < 2 || w[0] != '-' {
		return "", false
	}
	name := strings.TrimLeft(w, "-")
	name, _, _ = strings.Cut(name, "=")
	return name, name != ""
}

// firstOperand is the first word that is not an option (a subcommand).
func firstOperand(args []string) string {
	for _, w := range args {
		if !strings.HasPrefix(w, "-") {
			return w
		}
	}
	return ""
}

func normOption(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// inertVar reports whether assigning the variable before a command is
// known not to choose a program, code to load or configuration to read:
// an allowlist (GIT_*, npm_config_*, NODE_OPTIONS, LD_*, PAGER, EDITOR,
// PATH, HOME all do).
func inertVar(name string) bool {
	if inertVars[name] || strings.HasPrefix(name, "LC_") {
		return true
	}
	return false
}

var inertVars = map[string]bool{
	"CI": true, "NODE_ENV": true, "TZ": true, "LANG": true, "LANGUAGE": true, "NO_COLOR": true, "FORCE_COLOR": true,
	"CLICOLOR": true, "COLUMNS": true, "LINES": true, "TERM": true, "RUST_LOG": true, "RUST_BACKTRACE": true,
	"GOOS": true, "GOARCH": true, "CGO_ENABLED": true, "PYTHONUNBUFFERED": true, "PYTHONDONTWRITEBYTECODE": true,
	"PYTHONHASHSEED": true, "DEBUG": true, "VERBOSE": true, "LOG_LEVEL": true,
}

// RunOption is an option that makes a program run another, as a probe
// for allow rules: Spelling follows the words a rule starts with.
type RunOption struct {
	Spelling, Why string
}

// RunOptions lists, for the fixed words an allow rule's command starts
// with ("git diff", "npm run test"), spellings of options that make that
// program run another (RunsProgram reports each after those words), or
// nil when its program has none listed.
func RunOptions(prefix string) []RunOption {
	words := strings.Fields(prefix)
	if len(words) == 0 {
		return nil
	}
	prog := words[0]
	var out []RunOption
	add := func(s string) {
		c := Command{Argv: append(append([]string(nil), words...), strings.Fields(s)...)}
		if why := RunsProgram(c); why != "" {
			out = append(out, RunOption{Spelling: s, Why: why})
		}
	}
	if prog == "git" {
		if len(words) == 1 {
			add("-c core.pager=x log")
		}
		for _, o := range gitRunLong {
			add("--" + o + "=x")
		}
		for _, l := range gitRunOpts[firstOperand(words[1:])] {
			add("-" + string(l) + "x")
		}
		return out
	}
	r := rowFor(prog)
	if r == nil {
		return nil
	}
	for _, o := range r.long {
		add("--" + o + "=x")
	}
	for _, o := range r.single {
		add(o + "x")
	}
	for _, l := range r.short {
		add("-" + string(l) + " x")
	}
	for _, w := range r.words {
		add(w + "x")
	}
	for _, v := range r.vars {
		add(v + "=x")
	}
	return out
}
