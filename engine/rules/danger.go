package rules

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/engine/vocab"
)

// An allow rule is dangerous when it hands out arbitrary code execution:
// then it is reported as a Warning and not applied in auto mode, where no
// human reads the command. A Bash rule is dangerous when
//
//   - its command name is not fixed ("*", "* --help", "ls*", "./scripts/*"),
//   - or it matches one of the probes below: a launcher (interpreter, shell,
//     wrapper, package runner, remote or container exec...) given arguments
//     that run code of the caller's choosing ("python -c id").
//
// Probes are matched the way allow rules match commands, bare and with an
// environment prefix, so "python3 *", "python:*", "python3 -c:*" and
// "python *.py" are all caught while "python3 -m pytest:*" is not. The list
// is a heuristic: a rule handing arbitrary arguments to a program with its
// own code-running options (manage.py shell, an unknown CLI's plugins) is
// not recognised.
//
// An Edit, Write or NotebookEdit rule is dangerous when it covers every
// path, or a file whose content is run later: shell start-up files, PATH
// directories, scheduled jobs, git or SSH configuration, the agents' own
// settings (probePaths).

// launcher is a family of programs that run code given on their command
// line.
type launcher struct {
	names  []string
	args   []string // each makes "name arg" run code of the caller's choosing
	reason string
}

var launchers = []launcher{
	{[]string{"sh", "bash", "zsh", "dash", "ksh", "mksh", "yash", "fish", "csh", "tcsh", "ash"},
		[]string{"-c id", "script.sh", "-s"}, "a shell runs any command"},
	{[]string{"eval", "exec", "command", "builtin"},
		[]string{"id", "eval id"}, "runs its arguments as a command"},
	{[]string{"source", "."},
		[]string{"script.sh"}, "runs any script in the current shell"},
	{[]string{"sudo", "doas", "pkexec", "run0"},
		[]string{"id", "-u root id"}, "runs any command as another user"},
	{[]string{"su"},
		[]string{"-c id", "root -c id"}, "runs any command as another user"},
	{[]string{"env", "xargs", "nohup", "nice", "ionice", "time", "setsid", "watch", "strace", "ltrace",
		"valgrind", "caffeinate", "unbuffer", "systemd-run", "nsenter", "unshare", "firejail",
		"proxychains", "proxychains4", "torsocks", "entr", "watchexec", "chronic", "sg", "busybox"},
		[]string{"id", "sh -c id"}, "runs any command it is given"},
	{[]string{"timeout"}, []string{"10 id", "10s id"}, "runs any command it is given"},
	{[]string{"stdbuf"}, []string{"-o0 id", "-oL id"}, "runs any command it is given"},
	{[]string{"flock"}, []string{"/tmp/lock id", "-c id"}, "runs any command it is given"},
	{[]string{"chroot"}, []string{"/ id"}, "runs any command it is given"},
	{[]string{"script"}, []string{"-c id", "-qc id"}, "runs any command it is given"},
	{[]string{"parallel"}, []string{"id ::: a"}, "runs any command it is given"},
	{[]string{"gdb"}, []string{"-batch -ex shell id", "-ex shell id"}, "runs any command"},
	{[]string{"tmux"}, []string{"new-session -d id", "send-keys id"}, "runs any command"},
	{[]string{"screen"}, []string{"-dm id"}, "runs any command"},
	{[]string{"crontab", "at", "batch"}, []string{"x", "-", "now"}, "schedules any command"},
	{[]string{"find"}, []string{". -exec id ;", ". -execdir id ;", ". -name x -exec id ;", ". -type f -exec id ;"},
		"find -exec runs any command"},
	{[]string{"awk", "gawk", "mawk", "nawk"}, []string{`BEGIN{system("id")}`, `'BEGIN{system("id")}'`},
		"awk's system() runs any command"},
	{[]string{"sed", "gsed"}, []string{"1e id", "-n 1e id", "-e 1e id"},
		"GNU sed's e command runs any command"},
	{[]string{"python", "python2", "python3", "pypy", "pypy3", "python3.8", "python3.9", "python3.10",
		"python3.11", "python3.12", "python3.13", "python3.14"},
		[]string{"-c id", "-m mod", "script.py"}, "runs any Python code"},
	{[]string{"node", "nodejs"}, []string{"-e id", "--eval id", "-p id", "script.js"}, "runs any JavaScript"},
	{[]string{"deno"}, []string{"eval id", "run x.ts", "run -A x.ts", "x.ts"}, "runs any code"},
	{[]string{"bun"}, []string{"-e id", "run x.ts", "x pkg", "x.ts"}, "runs any code or package"},
	{[]string{"tsx", "ts-node", "ts-node-esm"}, []string{"x.ts", "-e id"}, "runs any TypeScript"},
	{[]string{"ruby"}, []string{"-e id", "script.rb"}, "runs any Ruby code"},
	{[]string{"irb"}, []string{"script.rb"}, "runs any Ruby code"},
	{[]string{"perl"}, []string{"-e id", "script.pl"}, "runs any Perl code"},
	{[]string{"php"}, []string{"-r id", "script.php"}, "runs any PHP code"},
	{[]string{"lua", "luajit"}, []string{"-e id", "script.lua"}, "runs any Lua code"},
	{[]string{"Rscript", "R", "julia"}, []string{"-e id"}, "runs any code"},
	{[]string{"osascript"}, []string{"-e id"}, "runs any AppleScript"},
	{[]string{"pwsh", "powershell"}, []string{"-c id", "-Command id"}, "runs any PowerShell"},
	{[]string{"tclsh", "wish", "expect"}, []string{"script.tcl", "-c id"}, "runs any Tcl code"},
	{[]string{"groovy", "elixir", "racket"}, []string{"-e id"}, "runs any code"},
	{[]string{"erl"}, []string{"-eval id"}, "runs any Erlang code"},
	{[]string{"guile"}, []string{"-c id"}, "runs any Scheme code"},
	{[]string{"java"}, []string{"X.java", "-jar x.jar"}, "runs any Java program"},
	{[]string{"jshell", "swift", "kotlin"}, []string{"x"}, "runs any code"},
	{[]string{"vim", "vi", "nvim", "ex", "view"}, []string{"-c x", "-S x", "+x"}, "runs any Vim script and shell command"},
	{[]string{"emacs"}, []string{"--eval x", "-batch --eval x"}, "runs any Emacs Lisp"},
	{[]string{"npx", "pnpx", "bunx", "uvx"}, []string{"pkg"}, "downloads and runs any package"},
	{[]string{"npm"}, []string{"exec pkg", "x pkg", "run x", "run-script x"},
		"npm exec downloads and runs any package; npm run runs any package script"},
	{[]string{"yarn"}, []string{"dlx pkg", "exec id", "run x", "node -e id"},
		"yarn dlx and exec run any package or command; yarn run any script"},
	{[]string{"pnpm"}, []string{"dlx pkg", "exec id", "run x"},
		"pnpm dlx and exec run any package or command; pnpm run any script"},
	{[]string{"uv"}, []string{"run id", "tool run pkg"}, "uv run runs any command"},
	{[]string{"pipx"}, []string{"run pkg"}, "downloads and runs any package"},
	{[]string{"poetry", "pdm", "hatch", "rye", "conda", "mamba", "micromamba", "pixi"},
		[]string{"run id"}, "runs any command in the environment"},
	{[]string{"bundle"}, []string{"exec id"}, "runs any command"},
	{[]string{"nix"}, []string{"run pkg", "shell pkg -c id", "develop -c id"}, "runs any package or command"},
	{[]string{"nix-shell"}, []string{"--run id", "-p pkg --run id"}, "runs any command"},
	{[]string{"go"}, []string{"run x.go", "generate ./...", "test -exec id ./...", "build -toolexec id",
		"vet -vettool=id", "env -w GOFLAGS=-toolexec=id"},
		"go run, generate, -exec and -toolexec run any program"},
	{[]string{"cargo"}, []string{"run", "run --bin x"}, "cargo run runs any program"},
	{[]string{"dotnet"}, []string{"run", "fsi x.fsx"}, "runs any program"},
	{[]string{"make", "gmake"}, []string{"x", "-f x.mk", "--eval=x"},
		"make runs any recipe (and -f or --eval take any makefile)"},
	{[]string{"just", "rake"}, []string{"x"}, "runs any recipe"},
	{[]string{"cmake"}, []string{"-P x.cmake"}, "runs any CMake script"},
	{[]string{"docker", "podman", "nerdctl"}, []string{"run img", "exec c id", "compose run x"},
		"runs any command in a container (often as root with host mounts)"},
	{[]string{"kubectl"}, []string{"exec p -- id", "run x --image=i", "debug x"},
		"runs any command in the cluster"},
	{[]string{"ssh"}, []string{"host id", "-o ProxyCommand=id host"}, "runs any command remotely and, with ProxyCommand, locally"},
	{[]string{"scp", "sftp"}, []string{"-o ProxyCommand=id a b:"}, "ProxyCommand runs any command"},
	{[]string{"rsync"}, []string{"-e id a b:"}, "rsync -e runs any command"},
	{[]string{"git"}, []string{"-c core.pager=id log", "-C x -c core.pager=id log", "config core.fsmonitor id", "submodule foreach id",
		"bisect run id", "rebase --exec id", "grep --open-files-in-pager=id x", "difftool -x id",
		"filter-branch --tree-filter id"},
		"git -c and git config set commands git runs; submodule foreach, bisect run, rebase --exec, grep -O and difftool -x run any command"},
	{[]string{"tar"}, []string{"-xf x --to-command=id", "-cf x --checkpoint-action=exec=id x"},
		"tar --to-command and --checkpoint-action run any command"},
	{[]string{"zip"}, []string{"x.zip x -T -TT id"}, "zip -TT runs any command"},
}

// probePaths are files whose content a later process runs, relative to a
// home directory ("~/") or absolute.
var probePaths = []string{
	"~/.bashrc", "~/.bash_profile", "~/.bash_login", "~/.profile", "~/.zshrc", "~/.zshenv",
	"~/.zprofile", "~/.zlogin", "~/.config/fish/config.fish", "~/.ssh/authorized_keys",
	"~/.ssh/config", "~/.gitconfig", "~/.config/git/config", "~/.local/bin/x", "~/bin/x",
	"~/.config/autostart/x.desktop", "~/.config/systemd/user/x.service",
	"~/Library/LaunchAgents/x.plist", "~/.claude/settings.json", "~/.gemini/settings.json",
	"~/.codex/config.toml", "~/.npmrc",
	"/etc/profile", "/etc/bash.bashrc", "/etc/cron.d/x", "/etc/sudoers", "/etc/ld.so.preload",
	"/usr/local/bin/x", "/etc/systemd/system/x.service",
}

// probeEnv is where relative path patterns are tried: a project two levels
// below the home directory.
var probeEnv = Env{Home: "/home/probe", Cwd: "/home/probe/src/project", Root: "/home/probe/src/project"}

// danger says why the command pattern, as an allow rule, runs arbitrary
// code ("" when it does not).
func (p *cmdPattern) danger() string {
	if len(p.parts) > 1 {
		// The words before the first '*', assignments skipped: the last
		// one touches the '*', so it is complete only if a space follows.
		words := strings.Split(p.parts[0], " ")
		k := 0
		for k < len(words)-1 && isAssignment(words[k]) {
			k++
		}
		if k == len(words)-1 {
			return "the command name is a wildcard: it matches any command"
		}
	}
	prefixes := []string{"", "A=1 "}
	if p.assigns != "" {
		prefixes = append(prefixes, p.assigns+" ")
	}
	for _, l := range launchers {
		for _, name := range l.names {
			for _, arg := range l.args {
				probe := name + " " + arg
				for _, pre := range prefixes {
					if p.match(pre+probe, false) {
						return fmt.Sprintf("it matches %q: %s", probe, l.reason)
					}
				}
			}
		}
	}
	return ""
}

// danger says why the path pattern, as an allow rule for edits, leads to
// arbitrary code execution ("" when it does not).
func (p *pathPattern) danger() string {
	for _, pp := range probePaths {
		x := pp
		if rest, ok := strings.CutPrefix(pp, "~/"); ok {
			x = probeEnv.Home + "/" + rest
		}
		if p.match(x, probeEnv, false) {
			return fmt.Sprintf("it covers %s, whose content is run later", pp)
		}
	}
	return ""
}

// The tool names agents give their shell and file-writing tools, from the
// vocabulary: literal allow rules naming them are checked for warnings
// like Bash and Edit rules.
var (
	shellToolNames = namesOf(func(k vocab.Kind) bool { return k == vocab.KindShell })
	editToolNames  = namesOf(vocab.Kind.IsEdit)
)

func namesOf(keep func(vocab.Kind) bool) map[string]bool {
	m := map[string]bool{}
	for _, n := range vocab.BuiltinNames(keep) {
		m[n] = true
	}
	return m
}

// warnings returns the warnings of an allow list.
func warnings(list string, rules []Rule) []Warning {
	var out []Warning
	for i, r := range rules {
		m := r.m
		if m == nil {
			continue
		}
		add := func(why string) {
			out = append(out, Warning{Rule: r.Text, Problem: fmt.Sprintf("%s[%d]: %s", list, i, why)})
		}
		shellish := m.fam == famBash || m.fam == famLiteral && shellToolNames[m.name]
		editish := m.fam.isEditFamily() || m.fam == famLiteral && editToolNames[m.name]
		if shellish && m.shellDanger != "" {
			add("hands out arbitrary code execution: " + m.shellDanger + "; not applied in auto mode")
		}
		if editish && m.editDanger != "" {
			add("hands out arbitrary code execution: " + m.editDanger + "; not applied to edits in auto mode")
		}
		if shellish && m.cmd != nil && hasShellOperator(r.Specifier) {
			add("never matches: allow rules are matched against each simple command, and this one spells a shell operator (;, |, &&, $(...) or `...`)")
		}
	}
	return out
}
