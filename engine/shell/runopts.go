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
	row := runRows[prog]
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
	// short are short option letters; cluster says they may be bundled
	// (-avze), else only the word's first letter counts.
	short   string
	cluster bool
	// words are prefixes of any argument (less +!cmd, make SHELL=).
	words []string
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
		long: []string{"script-shell", "shell", "node-options", "userconfig", "globalconfig", "git", "call", "init-module",
			"onload-script", "editor", "browser", "viewer", "sign-git-commit", "sign-git-tag"},
		short: "c", why: "names a program, code to load or configuration that does"}},
	{[]string{"rg"}, runRow{long: []string{"pre", "hostname-bin"}, why: "runs a program on each file or for the host name"}},
	{[]string{"sort", "gsort"}, runRow{long: []string{"compress-program"}, why: "runs the compressor it names"}},
	{[]string{"go"}, runRow{single: []string{"-exec", "-toolexec", "-vettool"}, why: "runs the program it names"}},
	{[]string{"diff", "sdiff", "diff3"}, runRow{long: []string{"diff-program"}, why: "runs the program it names"}},
	{[]string{"tar", "gtar", "bsdtar"}, runRow{long: []string{"use-compress-program", "to-command", "checkpoint-action", "info-script",
		"new-volume-script", "rsh-command", "rmt-command"}, short: "IF", cluster: true,
		why: "runs a compressor, script or command it names"}},
	{[]string{"find"}, runRow{single: []string{"-exec", "-ok"}, why: "runs a command on what it finds"}},
	{[]string{"man"}, runRow{long: []string{"pager", "html"}, short: "PH", cluster: true, why: "runs a pager or browser it names"}},
	{[]string{"less", "more", "most"}, runRow{words: []string{"+"}, why: "runs commands given with +"}},
	{[]string{"rsync"}, runRow{long: []string{"rsh", "rsync-path"}, short: "e", cluster: true, why: "runs a remote shell it names"}},
	{[]string{"scp", "sftp", "ssh"}, runRow{short: "SoF", cluster: true, why: "runs a program or proxy command it names, or a configuration file that may"}},
	{[]string{"zip"}, runRow{single: []string{"-TT"}, why: "runs a test command it names"}},
	{[]string{"pytest", "py.test"}, runRow{long: []string{"pdbcls"}, short: "p", why: "loads a plugin or debugger it names"}},
	{[]string{"cargo"}, runRow{long: []string{"config"}, why: "sets configuration, which names runners and wrappers"}},
	{[]string{"gcc", "g++", "cc", "c++", "clang", "clang++"}, runRow{single: []string{"-B", "-fplugin", "-specs", "--specs"},
		why: "runs programs or plugins it names"}},
	{[]string{"make", "gmake"}, runRow{words: []string{"SHELL=", ".SHELLFLAGS=", "MAKESHELL="}, why: "runs its recipes with a shell it names"}},
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
	if name, ok := strings.CutPrefix(w, "--"); ok {
		name, _, _ = strings.Cut(name, "=")
		if contains(r.long, normOption(name)) {
			return found()
		}
		return ""
	}
	if len(w) < 2 || w[0] != '-' {
		return ""
	}
	letters := w[1:2]
	if r.cluster {
		letters = w[1:]
	}
	if !strings.ContainsAny(letters, r.short) || r.short == "" {
		return ""
	}
	if prog == "pytest" || prog == "py.test" {
		// -p no:NAME turns a plugin off.
		v := w[2:]
		if v == "" && len(rest) > 0 {
			v = rest[0]
		}
		if strings.HasPrefix(v, "no:") {
			return ""
		}
	}
	return found()
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
	r := runRows[prog]
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
	return out
}
