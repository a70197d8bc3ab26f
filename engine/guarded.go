package engine

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/engine/pathcheck"
	"github.com/toolgate/toolgate/engine/rules"
)

// guardedFiles are files no agent may write by any means (toolgate's own
// config, the files it imports, its TLS and token files): an agent that
// could change them could change what toolgate allows it. The files
// toolgate writes (the audit log and its backups, the classifier's dump)
// are guarded alike: an agent that could remove or rewrite them could
// hide what it did.
type guardedFiles struct {
	paths []string // absolute and clean, as given and as resolved
	// globs name more of them by a glob in the last component (an audit
	// log's backups, named by the time of their rotation).
	globs []guardGlob
}

// guardGlob is a directory (absolute and clean) and a one-component glob
// of files in it.
type guardGlob struct{ dir, base string }

func (gl guardGlob) path() string { return filepath.Join(gl.dir, gl.base) }

func newGuardedFiles(files, patterns []string) (guardedFiles, error) {
	var g guardedFiles
	for i, p := range patterns {
		if !filepath.IsAbs(p) {
			return g, fmt.Errorf("guarded_patterns[%d]: %q is not absolute", i, p)
		}
		p = filepath.Clean(p)
		dir, base := filepath.Dir(p), filepath.Base(p)
		if !knowledge.HasMeta(base) {
			files = append(slices.Clip(files), p)
			continue
		}
		if knowledge.HasMeta(dir) || !knowledge.GlobSupported(base) {
			return g, fmt.Errorf("guarded_patterns[%d]: %q: only the last component may be a glob, of *, ? and plain bracket sets", i, p)
		}
		g.globs = append(g.globs, guardGlob{dir, base})
		if r, err := pathcheck.Resolve("/", dir); err == nil && r != dir {
			g.globs = append(g.globs, guardGlob{r, base})
		}
	}
	for i, f := range files {
		if !filepath.IsAbs(f) {
			return g, fmt.Errorf("guarded[%d]: %q is not absolute", i, f)
		}
		f = filepath.Clean(f)
		g.paths = append(g.paths, f)
		if r, err := pathcheck.Resolve("/", f); err == nil && r != f {
			g.paths = append(g.paths, r)
		}
	}
	return g, nil
}

// treeMovers act on a directory and what is below it, or put files into
// one: naming a guarded file's directory is enough for them to replace it.
var treeMovers = map[string]bool{
	"mv": true, "rm": true, "rmdir": true, "ln": true, "cp": true, "install": true, "rsync": true,
	"chmod": true, "chown": true, "chgrp": true, "chattr": true, "setfacl": true, "mount": true,
	"umount": true, "tar": true, "unzip": true, "cpio": true, "find": true, "shred": true, "unlink": true,
}

// write returns why the call may write, move, link or delete a guarded
// file, or "". Reads are left to the usual stages. Edit targets are
// compared as given and as resolved; a shell command that is not
// read-only may not name a guarded file in any word (nor inside one, as
// in a script's text), nor, for programs that move or remove trees, one of
// its directories. A word whose value is known only at run time can name
// anything: those are beyond this check, and go through the usual stages.
func (g guardedFiles) write(c *call) string {
	if len(g.paths) == 0 && len(g.globs) == 0 {
		return ""
	}
	if c.kind.IsEdit() {
		for _, p := range slices.Concat(c.rc.Paths, c.edits.resolved) {
			if g.is(p) {
				return g.why(p)
			}
		}
		return ""
	}
	if c.kind != KindShell || c.shell != nil && c.shell.ReadOnly {
		return "" // the shell analysis found that it writes nothing
	}
	for _, w := range c.rc.ShellWrites {
		if g.is(w) {
			return g.why(w)
		}
		if g.under(w) {
			return g.whyUnder(w)
		}
	}
	if p := g.inText(c.rc.Raw); p != "" {
		return g.why(p)
	}
	if c.shell == nil {
		return ""
	}
	// A relative word may be relative to any directory the command goes
	// to: the one it starts in and every cd target.
	dirs := []string{c.shellDir}
	for _, cmd := range c.shell.Commands {
		if len(cmd.Argv) == 2 && (cmd.Argv[0] == "cd" || cmd.Argv[0] == "pushd") {
			dirs = append(dirs, g.placed(c.shellDir, cmd.Argv[1], nil)...)
		}
	}
	words := 0
	for _, cmd := range c.shell.Commands {
		words += len(cmd.Argv)
	}
	if len(dirs) > maxGuardDirs || words > maxGuardWords {
		return fmt.Sprintf("the command has more directories or words than toolgate checks for writes to its own files (%d, %d)", maxGuardDirs, maxGuardWords)
	}
	budget := maxGuardResolves
	for _, cmd := range c.shell.Commands {
		if len(cmd.Argv) == 0 {
			continue
		}
		trees := treeMovers[cmd.Argv[0]]
		for _, w := range cmd.Argv[1:] {
			if _, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "-") {
				w = v // --target-directory=DIR
			}
			if w == "" || strings.ContainsAny(w, "$`") {
				continue
			}
			for _, dir := range dirs {
				for _, p := range g.placed(dir, w, &budget) {
					if g.is(p) {
						return g.why(w)
					}
					if trees && g.under(p) {
						return g.whyUnder(w)
					}
				}
			}
		}
	}
	return ""
}

// Bounds on the work of the check: a command past the first two is
// denied; past the third, words are compared as written only.
const (
	maxGuardDirs     = 32
	maxGuardWords    = 4096
	maxGuardResolves = 256
)

// placed returns the absolute forms of word w run in dir: lexical, and
// resolved the kernel's way when that differs and the budget (nil: none)
// allows a resolution.
func (g guardedFiles) placed(dir, w string, budget *int) []string {
	p := w
	if !filepath.IsAbs(p) {
		if dir == "" {
			return nil
		}
		p = dir + "/" + p
	}
	out := []string{filepath.Clean(p)}
	// A glob in the last component only: its directory is resolved (a
	// link in the project to the directory of a guarded file).
	dir, base := out[0], ""
	if knowledge.HasMeta(out[0]) {
		dir, base = filepath.Dir(out[0]), filepath.Base(out[0])
	}
	if knowledge.HasMeta(dir) || budget != nil && *budget <= 0 {
		return out
	}
	if budget != nil {
		*budget--
	}
	if r, err := pathcheck.Resolve("/", dir); err == nil && r != dir {
		if base != "" {
			r = filepath.Join(r, base)
		}
		out = append(out, r)
	}
	return out
}

// is reports whether p is a guarded file, or a glob that may match one.
func (g guardedFiles) is(p string) bool {
	for _, f := range g.paths {
		if p == f || knowledge.HasMeta(p) && globMayMatch(p, f) {
			return true
		}
	}
	for _, gl := range g.globs {
		if gl.mayMatch(p) {
			return true
		}
	}
	return false
}

// mayMatch reports whether path p, or any path the glob p may match, is
// one the guard's glob matches. Two globs are compared by their literal
// ends only (what comes before the first and after the last glob
// character, as if a star could cross slashes): they may overlap unless
// those disagree.
func (gl guardGlob) mayMatch(p string) bool {
	if !knowledge.HasMeta(p) {
		if filepath.Dir(p) != gl.dir {
			return false
		}
		m, ok := knowledge.Match(gl.base, filepath.Base(p))
		return m || !ok
	}
	a, b := knowledge.Fold(p), knowledge.Fold(gl.path())
	pa, pb := a[:strings.IndexAny(a, "*?[")], b[:strings.IndexAny(b, "*?[")]
	sa, sb := a[strings.LastIndexAny(a, "*?[]")+1:], b[strings.LastIndexAny(b, "*?[]")+1:]
	return (strings.HasPrefix(pa, pb) || strings.HasPrefix(pb, pa)) && (strings.HasSuffix(sa, sb) || strings.HasSuffix(sb, sa))
}

// under reports whether a guarded file lies below p, or p is a glob that
// may match one of their directories.
func (g guardedFiles) under(p string) bool {
	dirs := make([]string, 0, len(g.paths)+len(g.globs))
	for _, f := range g.paths {
		dirs = append(dirs, filepath.Dir(f))
	}
	for _, gl := range g.globs {
		dirs = append(dirs, gl.dir)
	}
	for _, d := range dirs {
		for ; ; d = filepath.Dir(d) {
			if p == d || knowledge.HasMeta(p) && globMayMatch(p, d) {
				return true
			}
			if d == "/" {
				break
			}
		}
	}
	return false
}

// inText returns the guarded file whose path appears in text, or "": for
// a glob, its directory and the literal start of its name.
func (g guardedFiles) inText(text string) string {
	for _, f := range g.paths {
		if strings.Contains(text, f) {
			return f
		}
	}
	for _, gl := range g.globs {
		p := gl.path()
		if strings.Contains(text, p[:strings.IndexAny(p, "*?[")]) {
			return p
		}
	}
	return ""
}

func (g guardedFiles) why(p string) string {
	return fmt.Sprintf("%s is one of toolgate's own files, which no agent may change (self-protection)", truncate(p, 200))
}

// namedBy reports whether rule r names one guarded file exactly
// (Edit(//path)): the rule the config adds to keep agents off it, which
// says no more than the guard's own reason.
func (g guardedFiles) namedBy(r rules.Rule) bool {
	p, ok := strings.CutPrefix(r.Specifier, "/")
	return ok && strings.HasPrefix(p, "/") && slices.Contains(g.paths, p)
}

// whyUnder is why for a directory that holds a guarded file.
func (g guardedFiles) whyUnder(p string) string {
	return fmt.Sprintf("%s holds toolgate's own files, which no agent may change (self-protection)", truncate(p, 200))
}

// globMayMatch reports whether the glob pattern may match path, component
// by component; syntax the matcher does not read exactly counts as a match.
func globMayMatch(pattern, path string) bool {
	ps, fs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(fs) {
		return slices.Contains(ps, "**")
	}
	for i := range ps {
		if m, ok := knowledge.Match(ps[i], fs[i]); ok && !m {
			return false
		}
	}
	return true
}
