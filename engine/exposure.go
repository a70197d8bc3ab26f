package engine

import (
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
			if slices.ContainsFunc(args, func(a string) bool {
				return strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "E")
			}) {
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
			if runsGit(cmds) {
				return gitElsewhere
			}
		case "git":
			if why := gitExposure(args, c.Env); why != "" {
				return why
			}
		}
	}
	return ""
}

// gitElsewhere is why git run anywhere but the project's root, or on
// another repository, is not read-only: a repository the project carries
// as files (a bare one, or one named by commondir) brings a config that
// git obeys, and core.fsmonitor or diff.external run programs.
const gitElsewhere = "runs git outside the project's root or on another repository, whose configuration can run code"

func gitExposure(args, env []string) string {
	for _, e := range env {
		if strings.HasPrefix(e, "GIT_") {
			return gitElsewhere
		}
	}
	// Global options come before the subcommand.
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		a := args[i]
		switch {
		case a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--bare",
			strings.HasPrefix(a, "-C"), strings.HasPrefix(a, "--git-dir="), strings.HasPrefix(a, "--work-tree="):
			// --bare takes the directory itself, the project's files, for
			// the repository.
			return gitElsewhere
		case a == "-c" || a == "--namespace" || a == "--config-env":
			i++ // its value, which is not the subcommand
		}
	}
	if i < len(args) && args[i] == "config" {
		// Only a single named key may be read: listings and regexps
		// print tokens (http.*.extraheader, credential helpers).
		rest := args[i+1:]
		if len(rest) != 2 || (rest[0] != "--get" && rest[0] != "get") || secretName.MatchString(rest[1]) ||
			strings.Contains(strings.ToLower(rest[1]), "extraheader") || strings.HasPrefix(rest[1], "-") {
			return "may print stored git credentials"
		}
	}
	return ""
}

func runsGit(cmds []shell.Command) bool {
	return slices.ContainsFunc(cmds, func(c shell.Command) bool { return len(c.Argv) > 0 && c.Argv[0] == "git" })
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
