package engine

import (
	"slices"
	"strings"

	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/engine/shell"
)

// exposure reports why a read-only command should still not run unasked:
// it would print stored git credentials, or tell git to use another
// repository, whose configuration can run code. "" means nothing found.
// (Variables and environments are judged by the shell analysis, reads by
// the read roots.)
func exposure(cmds []shell.Command) string {
	for _, c := range cmds {
		if len(c.Argv) == 0 {
			continue
		}
		args := c.Argv[1:]
		switch c.Argv[0] {
		case "git":
			if why := gitExposure(args, c.Env); why != "" {
				return why
			}
		}
	}
	return ""
}

// gitElsewhere is why git run outside the project, or told to use another
// repository, is not read-only: toolgate reads the repository git finds
// where it runs (gitproof.go), and -C, --git-dir, --work-tree, --bare and
// GIT_* variables point it elsewhere.
const gitElsewhere = "runs git outside the project or on another repository, whose configuration can run code"

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
		if len(rest) != 2 || (rest[0] != "--get" && rest[0] != "get") || !knowledge.GitConfigPrintable(rest[1]) {
			return "may print stored git credentials"
		}
	}
	return ""
}

func runsGit(cmds []shell.Command) bool {
	return slices.ContainsFunc(cmds, func(c shell.Command) bool { return len(c.Argv) > 0 && c.Argv[0] == "git" })
}
