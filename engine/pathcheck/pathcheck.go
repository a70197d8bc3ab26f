// Package pathcheck decides whether a file path an agent wants to edit or
// write lies strictly inside one of a set of allowed directories (the working
// directory and any additional directories) and whether it hits a protected
// path. It backs the "accept-edits" fast path, so it is a security boundary:
// every doubt must resolve to "not inside" or to an error, never to "inside".
//
// Paths are resolved component by component against the real filesystem, the
// way the Linux kernel does, because lexical cleaning (filepath.Clean) before
// symlink resolution gets "link/../x" wrong. Because some tools do normalize
// lexically before opening, and some replace the file (rename over it) rather
// than write through a final symlink, Check requires every one of those
// readings to land inside an allowed directory, so that the verdict holds
// whichever way the tool writes.
//
// All checks run against this machine's filesystem at the time of the call;
// see Checker for the consequences.
package pathcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/engine/knowledge"
)

const (
	// maxHops mirrors Linux MAXSYMLINKS: the 41st symlink is ELOOP.
	maxHops = 40
	// pathMax mirrors Linux PATH_MAX (which counts the terminating NUL): the
	// kernel refuses longer strings, and the cap bounds the work per request.
	pathMax = 4096
	// nameMax mirrors Linux NAME_MAX, the longest single component.
	nameMax = 255
)

// DefaultProtected is the built-in protected-pattern list, taken from
// knowledge.ProtectedGroups: files that something runs, loads or obeys on
// its own (VCS internals, agents' instructions and configuration, CI
// definitions, git hook managers, editor and workspace files that run on
// open, startup files, shell environments, package-manager hooks and
// environment files), which must never be auto-approved even inside the
// working directory. Callers pass it (possibly extended) to New; New does
// not add it implicitly.
var DefaultProtected = knowledge.ProtectedPatterns()

// Resolve returns the absolute, symlink-free form of p as the kernel would
// resolve it, tolerating components that do not exist yet (they are appended
// lexically, as mkdir -p then write would create them). Relative p is joined
// to base, which must be absolute even when p is absolute (a relative base is
// always a caller bug). Errors: empty path, NUL byte, relative base, a path
// starting with "~" (tools do not expand it: never guess), a path or base of
// PATH_MAX bytes or more (also for the resolved result), a component longer
// than NAME_MAX, more than 40 symlink hops (ELOOP), a non-directory
// used as a directory (ENOTDIR), a symlink under /proc (magic links resolve per
// process, so the server cannot know where the agent's would lead), and any
// Lstat/Readlink error other than "does not exist" (e.g. EACCES).
func Resolve(base, p string) (string, error) {
	return (*Proofs)(nil).Resolve(base, p)
}

// Resolve is the package's Resolve, using and adding to the proofs.
func (pr *Proofs) Resolve(base, p string) (string, error) {
	joined, err := join(base, p)
	if err != nil {
		return "", err
	}
	w, err := pr.walk(joined, true)
	if err != nil {
		return "", err
	}
	return w.path, nil
}

// join validates the inputs and concatenates them without cleaning, because
// cleaning before resolution is exactly the bug this package exists to avoid.
func join(base, p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("pathcheck: empty path")
	case strings.IndexByte(p, 0) >= 0:
		return "", fmt.Errorf("pathcheck: path %q contains a NUL byte", p)
	case strings.IndexByte(base, 0) >= 0:
		return "", fmt.Errorf("pathcheck: base %q contains a NUL byte", base)
	case strings.HasPrefix(p, "~"):
		return "", fmt.Errorf("pathcheck: path %q starts with ~, which is not expanded", p)
	case !filepath.IsAbs(base):
		return "", fmt.Errorf("pathcheck: base %q is not absolute", base)
	case len(p) >= pathMax:
		return "", &fs.PathError{Op: "resolve", Path: head(p, 64) + "...", Err: syscall.ENAMETOOLONG}
	case len(base) >= pathMax:
		return "", &fs.PathError{Op: "resolve", Path: head(base, 64) + "...", Err: syscall.ENAMETOOLONG}
	}
	if filepath.IsAbs(p) {
		return p, nil
	}
	return base + "/" + p, nil
}

// walked is the result of resolving one absolute path.
type walked struct {
	// path is the resolved, clean, symlink-free absolute path.
	path string
	// views are the names under which the target was reached through each
	// symlink: the link's own path plus the components still to resolve,
	// cleaned. Protected patterns are matched against them so that reaching
	// ".git/config" through an alias of a symlinked ".git" is still caught.
	views []string
	// finalLink reports that the walk met a symlink as the path's last
	// component; only then can followFinal change the result.
	finalLink bool
}

// walk resolves an absolute path component by component like the kernel's
// path walk, with "does not exist" tolerated as a future mkdir -p. With
// followFinal false, a symlink as the path's last component (no trailing
// slash) is kept, not followed, like lstat, O_NOFOLLOW or rename(2) onto it.
func (pr *Proofs) walk(abs string, followFinal bool) (walked, error) {
	// One look at the mount table serves the whole walk (the check's).
	t, err := pr.table()
	if err != nil {
		return walked{}, err
	}
	return pr.walkWith(t, abs, followFinal)
}

// walkWith is walk by the mount table t.
func (pr *Proofs) walkWith(t *mountTable, abs string, followFinal bool) (walked, error) {
	// Proven already: no system call. A name in a directory proven in
	// this check: one lstat.
	if state, known := pr.known(abs, false); known && state == linkProven {
		return walked{path: abs}, nil
	}
	if i := strings.LastIndexByte(abs, '/'); i > 0 {
		if last := abs[i+1:]; last != "" && last != "." && last != ".." {
			if dir, ok := pr.provenDir(abs[:i]); ok {
				return walkFrom(t, dir, []string{last}, abs, followFinal)
			}
		}
	}
	switch p, state := pr.probe(t, abs, false); state {
	case linkProven:
		return walked{path: p}, nil
	case linkAbsent:
		// Missing before any link: the rest is appended lexically, as
		// the walk would, which for a clean path is the path itself.
		if isClean(abs) && namesFit(abs) {
			return walked{path: abs}, nil
		}
	}
	// A file about to be created, or a link at the end: when the
	// directory holding it is proven link-free, only the last component
	// is left to walk.
	if i := strings.LastIndexByte(abs, '/'); i > 0 {
		if last := abs[i+1:]; last != "" && last != "." && last != ".." {
			if dir, ok := pr.linkFree(t, abs[:i], true); ok {
				return walkFrom(t, dir, []string{last}, abs, followFinal)
			}
		}
	}
	return walkComponents(t, abs, followFinal)
}

// namesFit reports whether every component of abs fits NAME_MAX, as the
// walk checks of missing components.
func namesFit(abs string) bool {
	n := 0
	for i := 0; i < len(abs); i++ {
		if abs[i] == '/' {
			n = 0
		} else if n++; n > nameMax {
			return false
		}
	}
	return true
}

// walkComponents is walk without the kernel's shortcut: one lstat per
// component, following links as the kernel does.
func walkComponents(t *mountTable, abs string, followFinal bool) (walked, error) {
	return walkFrom(t, "/", strings.Split(abs, "/"), abs, followFinal)
}

// walkFrom walks the components todo from cur, a clean, absolute,
// symlink-free directory. A component that is a foreign mount point (by
// the table t) is refused before it is looked up; what each look finds
// must be on a local device.
func walkFrom(t *mountTable, cur string, todo []string, abs string, followFinal bool) (walked, error) {
	var w walked
	curNonDir := false
	// missing counts the components at the end of cur that do not exist.
	// Below a missing directory nothing can exist, so they are appended
	// without an Lstat (keeping the walk linear) until ".." climbs back.
	missing := 0
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		// Anything after an existing non-directory, even "." or "..", or a
		// trailing slash, is ENOTDIR for the kernel; resolving "file/../x"
		// lexically would invent a path the kernel never reaches.
		if curNonDir {
			return walked{}, &fs.PathError{Op: "resolve", Path: cur, Err: syscall.ENOTDIR}
		}
		switch c {
		case "", ".":
			continue
		case "..":
			// cur is symlink-free, so its lexical parent is its real parent.
			cur = filepath.Dir(cur)
			if missing > 0 {
				missing--
			}
			continue
		}
		next := cur + "/" + c
		if cur == "/" {
			next = "/" + c
		}
		// The kernel would refuse to create these; checked here too because
		// missing components never reach Lstat.
		if len(c) > nameMax || len(next) >= pathMax {
			return walked{}, &fs.PathError{Op: "resolve", Path: next, Err: syscall.ENAMETOOLONG}
		}
		if missing > 0 {
			cur = next
			missing++
			continue
		}
		if err := t.refuseWay(next); err != nil {
			return walked{}, err
		}
		countStat()
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// Will be created (as a directory if more follows), as by
			// mkdir -p then write.
			cur = next
			missing = 1
			continue
		}
		if err != nil {
			return walked{}, err
		}
		if err := t.refuseFound(next, fi); err != nil {
			return walked{}, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			curNonDir = !fi.IsDir()
			continue
		}
		if len(todo) == 0 {
			w.finalLink = true
			if !followFinal {
				// Only the original last component can get here: had it
				// come from a link's target, that link would have been the
				// last.
				cur = next
				continue
			}
		}
		hops++
		if hops > maxHops {
			return walked{}, &fs.PathError{Op: "resolve", Path: abs, Err: syscall.ELOOP}
		}
		if cur == "/proc" || strings.HasPrefix(cur, "/proc/") {
			return walked{}, fmt.Errorf("pathcheck: refusing to follow %s: /proc links resolve per process", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return walked{}, err
		}
		if target == "" || strings.IndexByte(target, 0) >= 0 {
			// Linux cannot create these; treat as the kernel's ENOENT rather
			// than silently resolving to the link's directory.
			return walked{}, &fs.PathError{Op: "readlink", Path: next, Err: syscall.ENOENT}
		}
		w.views = append(w.views, filepath.Clean(next+"/"+strings.Join(todo, "/")))
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	w.path = cur
	return w, nil
}

// within reports whether p lies strictly inside dir, and p relative to dir.
// Both must be absolute. filepath.Rel, not a string prefix, so that
// "/x/app-evil" is not inside "/x/app".
func within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// root is one allowed directory.
type root struct {
	resolved string // symlink-free; what containment is decided against
	lexical  string // as configured, cleaned; for protected matching of unresolved targets
}

// pattern is one compiled protected pattern.
type pattern struct {
	raw   string   // as configured, reported in Verdict.Protected
	comps []string // case-folded components, each a valid path.Match pattern
	glob  []bool   // whether each component has metacharacters; others compare as strings
	// fix are a glob component's literal head and tail (before its first
	// and after its last metacharacter): a name it matches starts and
	// ends with them, so most names are refused without path.Match.
	// Empty for a component with a backslash, whose escapes they ignore.
	fix [][2]string
}

// Checker holds resolved roots and the protected-path patterns. It is
// immutable after New and safe for concurrent use.
//
// Roots are resolved once, in New; if a root (or a symlink leading to it) is
// changed afterwards, build a new Checker. Every verdict reflects this
// machine's filesystem at the moment of the call: a path that does not exist
// is judged lexically, so the server must see the same filesystem (same host,
// same mount namespace) as the agent, and a component created later (for
// example as a symlink, by a command running concurrently) can change where a
// write lands. Hard links, bind mounts and mount points are not visible to
// path resolution and are not detected.
type Checker struct {
	roots    []root
	patterns *Patterns
	proofs   *Proofs // nil: none kept
}

// New resolves each root (absolute, required; at least one; roots may not exist
// on this machine, in which case they resolve lexically by the same rules) and
// compiles protected patterns (pass DefaultProtected for the built-in list; nil
// protects nothing). Errors name the bad root or pattern. A root whose kernel
// resolution differs from that of its lexically cleaned form (a symlink
// followed by "..") is rejected as ambiguous.
func New(roots []string, protected []string) (*Checker, error) {
	pats, err := CompilePatterns(protected)
	if err != nil {
		return nil, err
	}
	return NewWithPatterns(roots, pats)
}

// Patterns are compiled protected patterns, shared by the Checkers built
// from them; immutable and safe for concurrent use. Callers that build a
// Checker per request compile their patterns once.
type Patterns struct {
	list []pattern
	// byFirst indexes the patterns whose first component is literal by
	// that component; globFirst lists the others. A path is then matched
	// against the few patterns that can start at each of its components,
	// not against every pattern.
	byFirst   map[string][]int
	globFirst []int
}

// CompilePatterns compiles protected patterns as New does; errors name the
// bad pattern.
func CompilePatterns(protected []string) (*Patterns, error) {
	pats := &Patterns{byFirst: map[string][]int{}}
	for _, p := range protected {
		pat, err := compile(p)
		if err != nil {
			return nil, err
		}
		if pat.glob[0] {
			pats.globFirst = append(pats.globFirst, len(pats.list))
		} else {
			pats.byFirst[pat.comps[0]] = append(pats.byFirst[pat.comps[0]], len(pats.list))
		}
		pats.list = append(pats.list, pat)
	}
	return pats, nil
}

// first returns the first pattern, in configured order, that matches any
// of rels (case-folded components), or nil.
func (ps *Patterns) first(rels [][]string) *pattern {
	if ps == nil {
		return nil
	}
	best := -1
	better := func(k int) bool { return best < 0 || k < best }
	for _, rel := range rels {
		for i, comp := range rel {
			for _, k := range ps.byFirst[comp] {
				if better(k) && ps.list[k].matchAt(rel, i) {
					best = k
				}
			}
		}
		for _, k := range ps.globFirst {
			if better(k) && ps.list[k].match(rel) {
				best = k
			}
		}
	}
	if best < 0 {
		return nil
	}
	return &ps.list[best]
}

// NewWithPatterns is New with patterns compiled beforehand; nil protects
// nothing.
func NewWithPatterns(roots []string, pats *Patterns) (*Checker, error) {
	return (*Proofs)(nil).NewChecker(roots, pats)
}

// NewChecker is NewWithPatterns, using and adding to the proofs, for the
// roots and for every path the Checker checks.
func (pr *Proofs) NewChecker(roots []string, pats *Patterns) (*Checker, error) {
	if len(roots) == 0 {
		return nil, errors.New("pathcheck: at least one root is required")
	}
	c := &Checker{patterns: pats, proofs: pr}
	for _, r := range roots {
		switch {
		case !filepath.IsAbs(r):
			return nil, fmt.Errorf("pathcheck: root %q is not absolute", r)
		case strings.IndexByte(r, 0) >= 0:
			return nil, fmt.Errorf("pathcheck: root %q contains a NUL byte", r)
		case len(r) >= pathMax:
			return nil, fmt.Errorf("pathcheck: root %q: %w", r, syscall.ENAMETOOLONG)
		}
		k, err := pr.walk(r, true)
		if err != nil {
			return nil, fmt.Errorf("pathcheck: root %q: %w", r, err)
		}
		lex := filepath.Clean(r)
		l := k
		if lex != r {
			// A clean root is its own lexical reading: walking it again
			// would only repeat the same system calls.
			if l, err = pr.walk(lex, true); err != nil {
				return nil, fmt.Errorf("pathcheck: root %q (cleaned %q): %w", r, lex, err)
			}
		}
		if k.path != l.path {
			return nil, fmt.Errorf("pathcheck: root %q is ambiguous: resolves to %q, but %q resolves to %q", r, k.path, lex, l.path)
		}
		c.roots = append(c.roots, root{resolved: k.path, lexical: lex})
	}
	return c, nil
}

// compile validates one protected pattern and splits it into folded
// components.
func compile(p string) (pattern, error) {
	bad := func(why string) (pattern, error) {
		return pattern{}, fmt.Errorf("pathcheck: protected pattern %q: %s", p, why)
	}
	switch {
	case p == "":
		return bad("empty")
	case strings.IndexByte(p, 0) >= 0:
		return bad("contains a NUL byte")
	case strings.HasPrefix(p, "/"):
		return bad("absolute (patterns match paths relative to a root)")
	}
	// A trailing "/" only documents that the pattern names a directory; the
	// window match below protects everything beneath it either way.
	comps := strings.Split(strings.TrimSuffix(p, "/"), "/")
	pat := pattern{raw: p}
	for _, comp := range comps {
		switch comp {
		case "":
			return bad("empty component")
		case ".", "..":
			return bad(fmt.Sprintf("%q component", comp))
		}
		f := fold(comp)
		for _, s := range []string{comp, f} {
			if _, err := path.Match(s, ""); err != nil {
				return pattern{}, fmt.Errorf("pathcheck: protected pattern %q: %w", p, err)
			}
		}
		pat.comps = append(pat.comps, f)
		pat.glob = append(pat.glob, strings.ContainsAny(f, `*?[\`))
		var fix [2]string
		if pat.glob[len(pat.glob)-1] && !strings.Contains(f, `\`) {
			fix = [2]string{f[:strings.IndexAny(f, "*?[")], f[strings.LastIndexAny(f, "*?]")+1:]}
		}
		pat.fix = append(pat.fix, fix)
	}
	return pat, nil
}

// match reports whether any window of consecutive components of rel matches
// the pattern, so ".git/" catches "sub/.git/hooks/x" and a file named ".git".
// rel components must already be folded.
func (p pattern) match(rel []string) bool {
	for i := range rel {
		if p.matchAt(rel, i) {
			return true
		}
	}
	return false
}

// matchAt reports whether the pattern matches rel's components from i on.
func (p pattern) matchAt(rel []string, i int) bool {
	if i+len(p.comps) > len(rel) {
		return false
	}
	for j, pc := range p.comps {
		if p.glob[j] {
			n, fix := rel[i+j], p.fix[j]
			if !strings.HasPrefix(n, fix[0]) || !strings.HasSuffix(n, fix[1]) || len(n) < len(fix[0])+len(fix[1]) {
				return false
			}
			if m, _ := path.Match(pc, n); !m {
				return false
			}
		} else if pc != rel[i+j] {
			return false
		}
	}
	return true
}

// fold maps s to a case-insensitive canonical form, rune by rune, using the
// full simple-fold orbit (so "K" KELVIN SIGN and "ſ" LONG S fold like k and s,
// as case-insensitive filesystems may treat them). It only ever merges names,
// which can add protected matches but never remove one. Invalid UTF-8 bytes
// are kept as they are so distinct raw names stay distinct.
func fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			b.WriteByte(s[i])
			i++
			continue
		}
		i += size
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < least {
				least = f
			}
		}
		b.WriteRune(unicode.ToLower(least))
	}
	return b.String()
}

// Verdict of one path check.
type Verdict struct {
	// Inside is true when the target lies strictly inside one of the roots
	// under every reading of the path: as the kernel resolves it and as its
	// lexically cleaned form resolves (tools differ in whether they normalize
	// first), each with a final symlink followed and not followed (a write
	// through it versus an atomic rename over it). The root itself is NOT
	// inside: a file target cannot be the directory.
	Inside bool
	// Root is the resolved root that contains the kernel-resolved target, the
	// first in New's order if several do ("" when outside).
	Root string
	// Resolved is the resolved absolute target, as Resolve returns it.
	Resolved string
	// Protected is the first protected pattern, in New's order, that matched
	// ("" when none), or the HEAD file of a directory above the target,
	// which git may take for a repository; only meaningful when Inside.
	Protected string
	// Hidden is the first dot-named component of the target's path, from
	// the file system's root, that knowledge.HiddenNotInert does not cover
	// ("" when none); set only when Inside.
	Hidden string
}

// Check resolves p (relative to base, which is normally the working directory)
// and reports where it lies. An error means the path could not be resolved;
// callers treat that as "not inside" (Inside is then always false).
//
// Protected patterns are matched, relative to every root containing it,
// against every reading described at Verdict.Inside, the lexically cleaned
// target as given (relative to the roots as configured and as resolved), and
// the name under which each symlink on the way was entered. So a symlinked
// ".git" still protects ".git/config". A match on any of them counts.
func (c *Checker) Check(base, p string) (Verdict, error) {
	joined, err := join(base, p)
	if err != nil {
		return Verdict{}, err
	}
	// Four readings of where a write lands, all of which must be inside:
	// followed as the kernel does (open, O_TRUNC), or with the last symlink
	// itself replaced (atomic write via rename), each both as given and as a
	// tool that normalizes lexically first would pass it on.
	lexical := filepath.Clean(joined)
	t, err := c.proofs.table()
	if err != nil {
		return Verdict{}, err
	}
	readings := []struct {
		path        string
		followFinal bool
	}{{joined, true}, {joined, false}, {lexical, true}, {lexical, false}}
	ws := make([]walked, len(readings))
	for i, r := range readings {
		switch {
		case i >= 2 && lexical == joined:
			// Already clean: the lexical readings are the first two, and
			// walking them again would only repeat the same system calls.
			ws[i] = ws[i-2]
			continue
		case !r.followFinal && !ws[i-1].finalLink:
			// The followed walk met no symlink as the last component, so
			// not following one walks the same way: skip the system calls.
			ws[i] = ws[i-1]
			continue
		}
		ws[i], err = c.proofs.walkWith(t, r.path, r.followFinal)
		if err != nil {
			v := Verdict{}
			if i > 0 {
				v.Resolved = ws[0].path
			}
			return v, err
		}
	}
	v := Verdict{Resolved: ws[0].path}
	v.Root, v.Inside = c.container(ws[0].path)
	for _, w := range ws[1:] {
		if _, in := c.container(w.path); !in {
			v.Root, v.Inside = "", false
		}
	}

	// Folded relative component lists of every name the target goes by,
	// each once (the readings often agree).
	var rels [][]string
	var seen []string
	add := func(dir, cand string) {
		rel, ok := within(dir, cand)
		if !ok || slices.Contains(seen, rel) {
			return
		}
		seen = append(seen, rel)
		rels = append(rels, strings.Split(fold(rel), "/"))
	}
	for _, r := range c.roots {
		add(r.lexical, lexical)
		add(r.resolved, lexical)
		for _, w := range ws {
			add(r.resolved, w.path)
			for _, vw := range w.views {
				add(r.resolved, vw)
			}
		}
	}
	// And, for a target inside the project, from the top: a root inside a
	// protected directory (a working directory of .git, an additional
	// directory of ~/.claude) must not make what is under it fair game.
	// Outside the project, protection stays relative to the roots.
	if v.Inside {
		fromTop := func(p string) {
			if rel := filepath.Clean(p)[1:]; rel != "" && !slices.Contains(seen, rel) {
				seen = append(seen, rel)
				rels = append(rels, strings.Split(fold(rel), "/"))
			}
		}
		fromTop(lexical)
		for _, w := range ws {
			fromTop(w.path)
		}
	}
	if pat := c.patterns.first(rels); pat != nil {
		v.Protected = pat.raw
	}
	if v.Inside {
		names := []string{lexical}
		for _, w := range ws {
			names = append(names, w.path)
			names = append(names, w.views...)
		}
		for _, n := range names {
			if h := knowledge.HiddenNotInert(strings.Split(n, "/")); h != "" {
				v.Hidden = h
				break
			}
		}
		if v.Protected == "" {
			lk := c.proofs.Look()
			if lk == nil || lk.t != t {
				lk = &Look{t: t}
			}
			v.Protected = c.markerAbove(lk, names)
		}
	}
	return v, nil
}

// markerAbove returns the marker file (knowledge.DirectoryMarkers) of a
// directory above any of the paths, or "": a HEAD, or a virtual
// environment's pyvenv.cfg, whose interpreter and scripts editors and
// tools run (looked for inside the project only: a write there cannot
// change an environment above it). git takes a directory for a
// repository when its HEAD
// reads as a ref or an object name and it has objects/ and refs/ (or a
// commondir file naming where they are): setup.c's is_git_directory, tried
// on every directory from the working directory up. A write below a
// directory with a HEAD may complete one or change one's config, hooks or
// objects, so it is protected wherever it is; a name that cannot be
// looked up counts as there. Lstat, as git's open, finds "head" for HEAD
// on a case-insensitive file system, and only there.
func (c *Checker) markerAbove(lk *Look, paths []string) string {
	t := lk.t
	var seen []string
	for _, p := range paths {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			if slices.Contains(seen, d) {
				break // and everything above it
			}
			seen = append(seen, d)
			inside := c.holds(d)
			if lk.NoneIn(d, markerNames(inside)...) {
				if d == "/" || d == "." {
					break
				}
				continue
			}
			for _, m := range knowledge.DirectoryMarkers {
				if !m.AboveProject && !inside {
					continue
				}
				f := strings.TrimSuffix(d, "/") + "/" + m.Name
				if _, err := t.lstat(f); err == nil || !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
					return f + " (" + m.Why + ")"
				}
			}
			if d == "/" || d == "." {
				break
			}
		}
	}
	return ""
}

// markerNames are the DirectoryMarkers' names looked for inside the
// project or above it.
var markerNames = func() func(inside bool) []string {
	var all, above []string
	for _, m := range knowledge.DirectoryMarkers {
		all = append(all, m.Name)
		if m.AboveProject {
			above = append(above, m.Name)
		}
	}
	return func(inside bool) []string {
		if inside {
			return all
		}
		return above
	}
}()

// holds reports whether d is a root or lies below one, as configured or
// resolved.
func (c *Checker) holds(d string) bool {
	for _, r := range c.roots {
		for _, rp := range []string{r.lexical, r.resolved} {
			if d == rp || strings.HasPrefix(d, strings.TrimSuffix(rp, "/")+"/") {
				return true
			}
		}
	}
	return false
}

// Roots returns each root as configured (cleaned) and resolved, in order.
func (c *Checker) Roots() (lexical, resolved []string) {
	for _, r := range c.roots {
		lexical = append(lexical, r.lexical)
		resolved = append(resolved, r.resolved)
	}
	return lexical, resolved
}

// container returns the first resolved root strictly containing p.
func (c *Checker) container(p string) (string, bool) {
	for _, r := range c.roots {
		if _, ok := within(r.resolved, p); ok {
			return r.resolved, true
		}
	}
	return "", false
}

// head returns at most the first n bytes of s, cut on a character boundary:
// it ends up in error text that must stay UTF-8.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
