package pathcheck

import "strings"

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
}

// Look returns the check's look at the mount table (taking it if this is
// the first), for the package's functions; nil (each call looks afresh)
// when the table cannot be read, or for a nil *Proofs.
func (pr *Proofs) Look() *Look {
	if pr == nil {
		return nil
	}
	if pr.look == nil {
		t, err := currentMounts()
		if err != nil {
			return nil
		}
		pr.look = &Look{t}
	}
	return pr.look
}

// table is the mount table for a walk: the check's, or a fresh one.
func (pr *Proofs) table() (*mountTable, error) {
	if l := pr.Look(); l != nil {
		return l.t, nil
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
	if clean {
		for _, p := range pr.seen {
			switch {
			case p.path == abs && (p.dir == dir || p.ok && !dir):
				// A directory proven is a path proven; a path proven
				// says nothing of whether it is a directory.
				if !p.ok {
					return "", linkUnknown
				}
				return abs, linkProven
			case p.ok && len(p.path) > len(abs) && strings.HasPrefix(p.path, abs) && (abs == "/" || p.path[len(abs)] == '/'):
				// An ancestor of a proven path: an existing directory
				// the kernel walked through, and no link.
				return abs, linkProven
			}
		}
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
