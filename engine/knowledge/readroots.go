package knowledge

import (
	"path"
	"strings"
)

// DefaultReadRoots are the directories outside a project that an agent may
// read locally: they hold no secrets by construction. Each is a system or
// toolchain tree that package managers write and users do not keep keys
// in, or a dependency cache of published source. A leading ~ is the agent
// user's home; a component may be a glob (python3.*). A secret-shaped name
// inside them is still refused.
var DefaultReadRoots = []string{
	// System headers, manuals and documentation.
	"/usr/include", "/usr/local/include", "/usr/share/doc", "/usr/share/man", "/usr/share/info",
	"/usr/share/zoneinfo", "/usr/share/dict", "/usr/share/licenses", "/usr/share/common-licenses",
	// Language toolchains and their standard libraries.
	"/usr/local/go", "/usr/lib/go", "/usr/lib/go-*", "/usr/share/go", "/usr/share/go-*", "/opt/go",
	"/usr/lib/python3", "/usr/lib/python3.*", "/usr/local/lib/python3.*", "/usr/lib/node_modules",
	"/usr/local/lib/node_modules", "/usr/lib/jvm", "/usr/share/java", "/usr/lib/rustlib", "/usr/lib/ruby",
	"/opt/homebrew/Cellar", "/usr/local/Cellar",
	"~/.rustup/toolchains", "~/.pyenv/versions", "~/.nvm/versions", "~/.local/share/uv/python", "~/sdk",
	// Dependency caches of published source.
	"~/go/pkg/mod", "~/.cargo/registry/src", "~/.cargo/git/checkouts", "~/.m2/repository",
	"~/.gradle/caches/modules-2/files-2.1", "~/.cache/go-build", "~/.local/lib/python3.*/site-packages",
	"/usr/local/lib/python3.*/dist-packages", "/usr/local/lib/python3.*/site-packages",
	// Claude Code's background commands write their output here
	// ($TMPDIR/claude-<uid>/<project>[/<session>]/tasks/<id>.output), and
	// the agent reads it with Read, the only way left in current versions:
	// output of commands that were themselves checked, as a foreground
	// command's output is. macOS's TMPDIR is under /var/folders.
	"/tmp/claude-*/*/tasks", "/tmp/claude-*/*/*/tasks",
	"/private/tmp/claude-*/*/tasks", "/private/tmp/claude-*/*/*/tasks",
	"/private/var/folders/*/*/T/claude-*/*/tasks", "/private/var/folders/*/*/T/claude-*/*/*/tasks",
}

// Roots is a compiled set of read roots.
type Roots struct{ list [][]string }

// CompileRoots compiles absolute roots (or ~/ ones, with home known; they
// are skipped when home is empty). A root is matched component by
// component, case-sensitively: folding would widen a root, the unsafe side.
func CompileRoots(roots []string, home string) Roots {
	var rs Roots
	for _, r := range roots {
		if rest, ok := strings.CutPrefix(r, "~"); ok {
			if home == "" || (rest != "" && rest[0] != '/') {
				continue
			}
			r = home + rest
		}
		if !path.IsAbs(r) {
			continue
		}
		rs.list = append(rs.list, splitPath(path.Clean(r)))
	}
	return rs
}

// Within reports whether the absolute, resolved path p lies in (or is) one
// of the roots.
func (rs Roots) Within(p string) bool {
	comps := splitPath(p)
	for _, root := range rs.list {
		if len(comps) < len(root) {
			continue
		}
		ok := true
		for i, c := range root {
			if c == comps[i] {
				continue
			}
			if m, supported := match(c, comps[i]); !m || !supported || comps[i] == ".." {
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
