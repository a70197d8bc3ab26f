package pathcheck

import (
	"fmt"
	"path/filepath"
	"strings"
)

// A client that shares this server's kernel and its working directory, but
// not its mount namespace or root (a container beside the server, a
// sidecar on the agent's workspace volume), sees the same files under that
// directory and its own anywhere else: another home, another /etc, other
// links' targets. Its check's proofs are confined to the directory: every
// look at a path outside it is refused with an *UnseenError, except the
// directories on the way to it, which a walk must pass (and only to pass:
// a directory on the way is not listed, nor searched for names).

// scope is the directories a confined check may look in.
type scope struct {
	roots []string // clean, absolute, resolved
	why   string
}

// refuse is nil when p, absolute with no link on its way (it may hold "."
// and ".."), lies within a root, or, with passing, when every directory
// the kernel's walk of p enters does and p is a directory on the way to
// one; else the refusal. A nil scope refuses nothing.
func (s *scope) refuse(p string, passing bool) error {
	if s == nil {
		return nil
	}
	cur := "/"
	for c := range strings.SplitSeq(p, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
		default:
			cur = filepath.Join(cur, c)
		}
		if !s.inside(cur) && !s.onWay(cur) {
			return s.refusal(p)
		}
	}
	if s.inside(cur) || passing && s.onWay(cur) {
		return nil
	}
	return s.refusal(p)
}

func (s *scope) inside(p string) bool {
	for _, r := range s.roots {
		if under(r, p) {
			return true
		}
	}
	return false
}

// onWay reports whether p is a directory above a root.
func (s *scope) onWay(p string) bool {
	for _, r := range s.roots {
		if p != r && under(p, r) {
			return true
		}
	}
	return false
}

// under reports whether the clean path p is dir or below it.
func under(dir, p string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir) && len(p) > len(dir) && p[len(dir)] == '/'
}

func (s *scope) refusal(p string) error {
	return &UnseenError{Why: fmt.Sprintf("%s lies outside %s, where alone this server sees the agent's files (%s)", head(p, 200), strings.Join(s.roots, ", "), s.why)}
}

// Confine limits every later look of these proofs to the directories
// roots (absolute, resolved) and those on the way to them (see scope);
// why says why, for the refusals.
func (pr *Proofs) Confine(roots []string, why string) {
	s := &scope{why: why}
	for _, r := range roots {
		s.roots = append(s.roots, filepath.Clean(r))
	}
	pr.scope = s
	if pr.look != nil && pr.look.t != nil {
		pr.look.t = pr.look.t.confined(s)
	}
}

// Sees reports whether the looks of these proofs may reach p (absolute,
// clean): always, unless they are blind, or confined with p outside.
// It runs the gate first, if it has not run.
func (pr *Proofs) Sees(p string) bool {
	if pr == nil {
		return true
	}
	pr.Look()
	if pr.unseen != nil {
		return false
	}
	return pr.scope == nil || pr.scope.inside(filepath.Clean(p))
}
