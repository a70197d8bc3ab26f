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
}

// AgentTaskRoots are the directories where Claude Code writes the output
// of a project's background commands,
// $TMPDIR/claude-<uid>/<project>[/<session>]/tasks/<id>.output, which the
// agent reads back with Read (current versions have no other way): output
// of commands that were themselves checked, as a foreground command's
// output is. <project> is the working directory with every character but
// ASCII letters and digits made "-": only this project's outputs are
// roots, not other projects' or other users' that /tmp also holds. The
// default TMPDIR only (/tmp; macOS's is under /var/folders); a custom one
// goes in read_roots.
func AgentTaskRoots(cwd string) []string {
	if !strings.HasPrefix(cwd, "/") {
		return nil
	}
	slug := []byte(cwd)
	for i, c := range slug {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			slug[i] = '-'
		}
	}
	var out []string
	for _, tmp := range []string{"/tmp", "/private/tmp", "/private/var/folders/*/*/T"} {
		base := tmp + "/claude-[0-9]*/" + string(slug)
		out = append(out, base+"/tasks", base+"/*/tasks")
	}
	return out
}

// InAgentTasks reports whether the resolved path p lies in one of
// AgentTaskRoots(cwd), its claude-<uid> directory named by digits only.
func InAgentTasks(p, cwd string) bool {
	if !strings.Contains(p, "/claude-") {
		return false // most reads outside the roots: no roots to compile
	}
	roots := AgentTaskRoots(cwd)
	if roots == nil || !CompileRoots(roots, "").Within(p) {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if uid, ok := strings.CutPrefix(c, "claude-"); ok {
			return uid != "" && strings.Trim(uid, "0123456789") == ""
		}
	}
	return false
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
