package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/engine/shell"
)

// secretName matches environment variable names that usually hold secrets.
var secretName = regexp.MustCompile(`(?i)(key|token|secret|passw|pwd|cred|auth|session|cookie|private|(^|_)pat($|_)|database_url|_dsn$|conn(ection)?_?str)`)

// varRef finds $NAME and ${NAME} references in a word.
var varRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

// exposure reports why a read-only command should still not run unasked:
// it would print secrets into the agent's transcript (the environment,
// a secret variable, stored git credentials) or read a repository outside
// the project, whose configuration can run code. "" means nothing found.
func exposure(cmds []shell.Command, line, cwd string) string {
	// Secret variables anywhere in the line: arguments, here-strings,
	// here-documents.
	for _, m := range varRef.FindAllStringSubmatch(line, -1) {
		if secretName.MatchString(m[1]) {
			return "expands $" + m[1] + ", which may hold a secret"
		}
	}
	for _, c := range cmds {
		if len(c.Argv) == 0 {
			continue
		}
		args := c.Argv[1:]
		switch c.Argv[0] {
		case "env", "printenv", "set", "export", "declare", "typeset", "compgen":
			// printenv NAME prints that variable; with options alone
			// (-0, --null, --) it prints them all.
			names := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, "-") })
			if len(names) == 0 || c.Argv[0] != "printenv" || slices.ContainsFunc(args, secretName.MatchString) {
				return "prints environment variables, which may hold secrets"
			}
		case "ps":
			// BSD-style "e" (ps e, ps eww, ps auxe) prints every process's
			// environment, and so does -E on macOS.
			if slices.Contains(args, "-E") {
				return "prints process environments, which may hold secrets"
			}
			for _, a := range args {
				if !strings.HasPrefix(a, "-") && strings.Contains(a, "e") {
					return "prints process environments, which may hold secrets"
				}
			}
		case "jq", "gojq", "yq":
			for _, a := range args {
				if strings.Contains(a, "$ENV") || strings.Contains(a, "env") {
					return "reads the environment, which may hold secrets"
				}
			}
		case "cd", "pushd":
			if len(args) > 0 && !insideLexically(cwd, args[len(args)-1]) {
				return "changes to a directory outside the project"
			}
			if len(args) > 0 && runsGit(cmds) && embeddedRepo(cwd, args[len(args)-1]) {
				return "runs git in a repository inside the project's files, whose configuration can run code"
			}
		case "git":
			if why := gitExposure(args, cwd); why != "" {
				return why
			}
		}
	}
	return ""
}

func gitExposure(args []string, cwd string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		dir := ""
		switch {
		case a == "-C" || a == "--git-dir" || a == "--work-tree":
			if i+1 < len(args) {
				dir = args[i+1]
			}
		case strings.HasPrefix(a, "--git-dir="), strings.HasPrefix(a, "--work-tree="):
			dir = a[strings.IndexByte(a, '=')+1:]
		case a == "config":
			// Only a single named key may be read: listings and regexps
			// print tokens (http.*.extraheader, credential helpers).
			rest := args[i+1:]
			if len(rest) != 2 || (rest[0] != "--get" && rest[0] != "get") || secretName.MatchString(rest[1]) ||
				strings.Contains(strings.ToLower(rest[1]), "extraheader") || strings.HasPrefix(rest[1], "-") {
				return "may print stored git credentials"
			}
			return ""
		}
		if dir != "" && !insideLexically(cwd, dir) {
			return "runs git in a repository outside the project, whose configuration can run code"
		}
		if dir == "" {
			continue
		}
		abs := dir
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(cwd, abs)
		}
		abs = filepath.Clean(abs)
		// -C may name any directory of the project; --git-dir and
		// --work-tree only the project's own repository.
		own := abs == filepath.Join(cwd, ".git") || abs == filepath.Clean(cwd)
		if a != "-C" && !own || embeddedRepo(cwd, abs) {
			return "runs git in a repository inside the project's files, whose configuration can run code"
		}
	}
	return ""
}

func runsGit(cmds []shell.Command) bool {
	return slices.ContainsFunc(cmds, func(c shell.Command) bool { return len(c.Argv) > 0 && c.Argv[0] == "git" })
}

// embeddedRepo reports a bare repository (HEAD, objects, refs) at dir or
// between it and cwd. A project can carry one as ordinary files, and git
// run there obeys its committed config (core.fsmonitor, diff.external
// run programs). A nested .git cannot be committed; the project's own
// .git is the user's.
func embeddedRepo(cwd, dir string) bool {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(cwd, dir)
	}
	cwd = filepath.Clean(cwd)
	for d := filepath.Clean(dir); d != cwd && strings.HasPrefix(d, cwd+string(filepath.Separator)); d = filepath.Dir(d) {
		if d == filepath.Join(cwd, ".git") {
			continue
		}
		head, herr := os.Stat(filepath.Join(d, "HEAD"))
		objects, oerr := os.Stat(filepath.Join(d, "objects"))
		if herr == nil && oerr == nil && head.Mode().IsRegular() && objects.IsDir() {
			return true
		}
	}
	return false
}

// insideLexically reports whether p (relative to cwd) stays within cwd.
func insideLexically(cwd, p string) bool {
	if cwd == "" || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$") {
		return false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	rel, err := filepath.Rel(cwd, filepath.Clean(p))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
