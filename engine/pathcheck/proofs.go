package pathcheck

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
)

// Proofs remembers, for one check, what linkFree answered: a path proven
// free of links (every component existing), and the paths it could not
// prove. A directory above a proven path is then proven too, and no path
// is asked twice: a Read costs one openat2 for the file and its project
// directory, not one each.
//
// It is safe because it lives for one check only and a check is one look
// at the file system: the kernel's answers a moment apart within a check
// are no staler than the decision itself is when the agent acts on it.
// Never keep one past its check; never share one between checks.
// The zero value is ready; a nil *Proofs remembers nothing.
type Proofs struct {
	seen []proof
	// look is the check's one look at the mount table, taken by its
	// first walk.
	look *Look
	// unseen, when set, refuses every look (Blind).
	unseen *UnseenError
	// gate, when set, is run by the first look (Gate).
	gate func(*Proofs) (blind string, roots []string, why string)
	// scope, when set, confines every look (Confine).
	scope *scope
}

// Look returns the check's look at the mount table (taking it if this is
// the first), for the package's functions; nil (each call looks afresh)
// when the table cannot be read, or for a nil *Proofs.
func (pr *Proofs) Look() *Look {
	if pr == nil {
		return nil
	}
	if g := pr.gate; g != nil {
		pr.gate = nil
		switch blind, roots, why := g(pr); {
		case blind != "":
			pr.Blind(blind)
		case roots != nil:
			pr.Confine(roots, why)
		}
	}
	if pr.look == nil {
		t, err := currentMounts()
		if err != nil {
			return nil
		}
		if pr.scope != nil {
			t = t.confined(pr.scope)
		}
		pr.look = &Look{t: t, pr: pr}
	}
	return pr.look
}

// table is the mount table for a walk: the check's, or a fresh one.
func (pr *Proofs) table() (*mountTable, error) {
	if l := pr.Look(); l != nil {
		return l.table()
	}
	return currentMounts()
}

type proof struct {
	path string
	dir  bool // linkFree was asked for a directory
	ok   bool
}

// maxProofs bounds what one check remembers; past it, paths are asked
// afresh (still correct, only slower).
const maxProofs = 32

// linkFree is the package's linkFree, answered from the proofs when they
// can. Only clean paths are looked up: they are the ones whose ancestors
// are plain prefixes; a path proven is kept as its clean form.
func (pr *Proofs) linkFree(t *mountTable, abs string, dir bool) (string, bool) {
	r, state := pr.probe(t, abs, dir)
	return r, state == linkProven
}

// probe is linkFree telling also a path absent (linkAbsent, never
// remembered: it proves nothing of the directories above).
func (pr *Proofs) probe(t *mountTable, abs string, dir bool) (string, linkState) {
	if pr == nil {
		r, state, _ := probe(t, abs, dir, false)
		return r, state
	}
	clean := isClean(abs)
	if state, known := pr.known(abs, dir); known {
		if state == linkProven {
			return abs, state
		}
		return "", state
	}
	r, state, _ := probe(t, abs, dir, false)
	ok := state == linkProven
	switch {
	case state == linkAbsent:
	case len(pr.seen) >= maxProofs:
	case clean:
		pr.seen = append(pr.seen, proof{abs, dir, ok})
	case ok:
		// The kernel walked every component of the clean path on its way
		// (a ".." after a directory that is no link lands where the clean
		// path says), so the clean path is proven too.
		pr.seen = append(pr.seen, proof{r, dir, true})
	}
	return r, state
}

// known is what the proofs already tell of abs, without a system call;
// known is false when they tell nothing.
func (pr *Proofs) known(abs string, dir bool) (state linkState, known bool) {
	if pr == nil || !isClean(abs) {
		return linkUnknown, false
	}
	for _, p := range pr.seen {
		switch {
		case p.path == abs && (p.dir == dir || p.ok && !dir):
			// A directory proven is a path proven; a path proven
			// says nothing of whether it is a directory.
			if !p.ok {
				return linkUnknown, true
			}
			return linkProven, true
		case p.ok && len(p.path) > len(abs) && strings.HasPrefix(p.path, abs) && (abs == "/" || p.path[len(abs)] == '/'):
			// An ancestor of a proven path: an existing directory
			// the kernel walked through, and no link.
			return linkProven, true
		}
	}
	return linkUnknown, false
}

// isClean reports whether abs is an absolute path filepath.Clean leaves
// as it is, without building the cleaned copy.
func isClean(abs string) bool {
	if abs == "/" {
		return true
	}
	if len(abs) < 2 || abs[0] != '/' || abs[len(abs)-1] == '/' {
		return false
	}
	for i := 1; i < len(abs); i++ {
		if abs[i] != '/' {
			continue
		}
		if abs[i-1] == '/' {
			return false
		}
		seg := abs[strings.LastIndexByte(abs[:i], '/')+1 : i]
		if seg == "." || seg == ".." {
			return false
		}
	}
	last := abs[strings.LastIndexByte(abs, '/')+1:]
	return last != "." && last != ".."
}

// A proven directory (one proven in this check, or above a path proven)
// is where a look may start: the names below it are looked up by their
// paths with lstat, one component at a time, each refused on a foreign
// mount point (by the table, before the lookup) and on a foreign device
// (after). That costs one lstat per name, where openat2 of the whole path
// costs about as much as two and three when it finds the file (it is
// closed and its device asked): a check probes dozens of names in a few
// directories (toolchain files up to /, markers, git's files).
//
// Nothing is held open between the proof and the lookup, so a directory
// on the way could be replaced by a link in between. That race gives the
// agent, who controls the project, nothing it lacks: a lookup led onto a
// mount that stalls is the check's file-system deadline's (answered ASK,
// as for a mount made since the table was polled); what it finds on a
// foreign device is refused; what it finds missing, or elsewhere on the
// local disk, is what the agent could arrange by changing the files
// after the check, which a check never sees either.

// maxProvenSteps is how many components below a proven directory are
// looked up one by one; past it, one openat2 costs less.
const maxProvenSteps = 2

// fromProven is the look at the clean path p from the deepest directory
// above it proven in this check; ok is false when only probe or the walk
// can tell (nothing proven above it, too many components left, a link on
// the way or an error the walk should word).
func (l *Look) fromProven(t *mountTable, p string, follow bool) (fs.FileInfo, bool, error) {
	if l == nil {
		return nil, false, nil
	}
	pr := l.pr
	if pr == nil || p == "/" || len(p) >= pathMax || !isClean(p) || strings.IndexByte(p, 0) >= 0 {
		return nil, false, nil // a NUL is the system call's EINVAL, as the walk words it
	}
	cur := pr.provenAbove(p)
	if cur == "" {
		return nil, false, nil
	}
	rest := strings.TrimPrefix(p[len(cur):], "/")
	if strings.Count(rest, "/") >= maxProvenSteps {
		return nil, false, nil
	}
	for {
		c, more, last := rest, "", true
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			c, more, last = rest[:i], rest[i+1:], false
		}
		// p up to c: no copy.
		end := len(cur) + 1 + len(c)
		if cur == "/" {
			end = 1 + len(c)
		}
		next := p[:end]
		fi, err := t.lstat(next)
		var fe *ForeignError
		switch {
		case err != nil && isNotExist(err):
			if last {
				return nil, true, err
			}
			// Missing, with no link before it: so is everything below.
			return nil, true, &fs.PathError{Op: "lstat", Path: p, Err: syscall.ENOENT}
		case errors.As(err, &fe):
			return nil, true, err
		case err != nil:
			return nil, false, nil
		case fi.Mode()&fs.ModeSymlink != 0 && (follow || !last):
			return nil, false, nil // the walk follows it
		case fi.IsDir():
			// A directory, no link, on a local device: proven.
			pr.remember(next)
		case !last:
			return nil, false, nil // ENOTDIR, as the walk words it
		}
		if last {
			return fi, true, nil
		}
		cur, rest = next, more
	}
}

// provenAbove returns the deepest directory strictly above the clean
// path p that this check has proven, or "".
func (pr *Proofs) provenAbove(p string) string {
	best := ""
	for _, e := range pr.seen {
		if !e.ok {
			continue
		}
		if a := commonAbove(e.path, p); len(a) > len(best) {
			best = a
		}
	}
	return best
}

// commonAbove returns the longest path that is e or above it, and
// strictly above p (both clean and absolute).
func commonAbove(e, p string) string {
	if e == "/" {
		return "/"
	}
	i := 0
	for i < len(e) && i < len(p) && e[i] == p[i] {
		i++
	}
	if i == len(e) && i < len(p) && p[i] == '/' {
		return e
	}
	if j := strings.LastIndexByte(p[:i], '/'); j > 0 {
		return p[:j]
	}
	return "/"
}

// remember keeps the clean directory d as proven (no link on its way, on
// a local device), while there is room.
func (pr *Proofs) remember(d string) {
	if len(pr.seen) < maxProofs {
		pr.seen = append(pr.seen, proof{d, true, true})
	}
}

// provenDir returns d cleaned when this check has proven it (or a path
// below it), without a system call. d may hold "." and empty components
// (the kernel's walk of those is the clean path's), not "..".
func (pr *Proofs) provenDir(d string) (string, bool) {
	if pr == nil || d == "" || d[0] != '/' {
		return "", false
	}
	if !isClean(d) {
		if d == "/.." || strings.HasSuffix(d, "/..") || strings.Contains(d, "/../") {
			return "", false
		}
		d = filepath.Clean(d)
	}
	for _, e := range pr.seen {
		if e.ok && (e.path == d || strings.HasPrefix(e.path, d) && (d == "/" || e.path[len(d)] == '/')) {
			return d, true
		}
	}
	return "", false
}
