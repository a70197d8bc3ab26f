package engine

import (
	"path"
	"strings"

	"github.com/toolgate/toolgate/engine/shell"
)

// wipe says why a shell command deletes, recursively, the file system
// root, a home directory or a top-level directory (or everything in one):
// never legitimate for an agent, so denied in every mode, bypass included,
// like toolgate's own files. Only spellings that name such a directory
// outright are caught (/, /etc, /etc/, /*, ~, ~/*, $HOME, /home/u); any
// other rm goes through the stages, where nothing that deletes is allowed
// locally outside accept-edits' proof. "" when none.
func wipe(cmds []shell.Command, home string) string {
	for _, c := range cmds {
		if len(c.Argv) == 0 || c.Argv[0] != "rm" {
			continue
		}
		recursive, operands := false, []string(nil)
		opts := true
		for _, a := range c.Argv[1:] {
			switch {
			case opts && a == "--":
				opts = false
			case opts && a == "--recursive":
				recursive = true
			case opts && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR"):
				recursive = true
			case opts && strings.HasPrefix(a, "-"):
			default:
				operands = append(operands, a)
			}
		}
		if !recursive {
			continue
		}
		for _, op := range operands {
			if t := wipeTarget(op, home); t != "" {
				return "deletes " + t + " recursively: the file system root, a home or a top-level directory"
			}
		}
	}
	return ""
}

// wipeTarget returns the directory an rm operand deletes (or empties, for
// "dir/*") when it is the root, a home or a top-level directory.
func wipeTarget(op, home string) string {
	p := strings.Trim(op, `"'`)
	for _, h := range []string{"${HOME}", "$HOME", "~"} {
		if rest, ok := strings.CutPrefix(p, h); ok && (rest == "" || rest[0] == '/') {
			if home == "" {
				return op // a home, wherever it is
			}
			p = home + rest
			break
		}
	}
	if !strings.HasPrefix(p, "/") {
		return ""
	}
	for {
		trimmed := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(p, "/*"), "/.*"), "/.")
		trimmed = strings.TrimRight(trimmed, "/")
		if trimmed == p || trimmed == "" {
			if trimmed == "" {
				p = "/"
			}
			break
		}
		p = trimmed
	}
	if p == "" {
		p = "/"
	}
	switch dir := path.Dir(p); {
	case p == "/", p == home, dir == "/":
		return p
	case dir == "/home" || dir == "/Users":
		return p
	}
	return ""
}
