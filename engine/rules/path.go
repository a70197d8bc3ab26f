package rules

import (
	"path"
	"strings"
)

// anchor is what a path pattern is relative to.
type anchor int

const (
	anchorAbs  anchor = iota // "//path": the filesystem root
	anchorHome               // "~/path": Env.Home
	anchorRoot               // "/path": Env.Root, or Env.Cwd when Root is ""
	anchorCwd                // "./path" or "path": Env.Cwd
)

// pathPattern is a gitignore-style path pattern compiled.
type pathPattern struct {
	anchor anchor
	// ups is how many leading ".." the pattern climbs from its anchor.
	ups int
	// segs are the pattern's segments after the anchor: literal names, globs
	// for path.Match, or "**". Empty: the anchor directory itself.
	segs []string
	// lower is segs in ASCII lower case; floating and floatingLower are
	// both behind a leading "**", for deny matching when the anchor is
	// unknown. All are computed once, at compile time.
	lower, floating, floatingLower []string
	// need and needLower are the literal segments (no wildcard) every path
	// the pattern matches has among its own: a path without one of them
	// is passed over without the segment-by-segment match, which most
	// paths are by most deny rules (//**/.ssh/id_* needs ".ssh").
	need, needLower []string
}

// compilePath compiles a path pattern; a non-empty problem says why it
// cannot be.
func compilePath(spec string) (*pathPattern, string) {
	p := &pathPattern{}
	rest, relative := spec, false
	switch {
	case strings.HasPrefix(spec, "//"):
		p.anchor, rest = anchorAbs, spec[2:]
	case spec == "~":
		p.anchor, rest = anchorHome, ""
	case strings.HasPrefix(spec, "~/"):
		p.anchor, rest = anchorHome, spec[2:]
	case strings.HasPrefix(spec, "~"):
		return nil, `"~user" paths are not supported (write ~/path or //absolute/path)`
	case strings.HasPrefix(spec, "/"):
		p.anchor, rest = anchorRoot, spec[1:]
	case spec == ".":
		p.anchor, rest = anchorCwd, ""
	case strings.HasPrefix(spec, "./"):
		p.anchor, rest = anchorCwd, spec[2:]
	default:
		p.anchor, rest, relative = anchorCwd, spec, true
	}
	// A trailing "/" or "/**" ("everything below the directory") adds
	// nothing: a pattern matching a directory matches everything below it,
	// and matching the directory itself is harmless (an allowed search of
	// it reads only what is below it).
	for {
		if t := strings.TrimRight(rest, "/"); t != rest {
			rest = t
		} else if t, ok := strings.CutSuffix(rest, "/**"); ok {
			rest = t
		} else if rest == "**" {
			rest = ""
		} else {
			break
		}
	}
	// A pattern without a slash matches at any depth below its anchor
	// (gitignore), as if it began with "**/".
	floating := relative && rest != "" && rest != ".." && rest != "." && !strings.Contains(rest, "/")
	globSeen := false
	for _, s := range strings.Split(rest, "/") {
		switch {
		case s == "" || s == ".":
		case s == "..":
			if globSeen {
				return nil, `".." after a wildcard`
			}
			if len(p.segs) > 0 {
				p.segs = p.segs[:len(p.segs)-1]
			} else {
				p.ups++
			}
		case s == "**":
			globSeen = true
			if len(p.segs) == 0 || p.segs[len(p.segs)-1] != "**" {
				p.segs = append(p.segs, s)
			}
		default:
			if isGlob(s) {
				globSeen = true
				if _, err := path.Match(s, ""); err != nil {
					return nil, "bad pattern " + quote(s) + ": unclosed '[' or trailing '\\'"
				}
			}
			p.segs = append(p.segs, s)
		}
	}
	if floating && len(p.segs) > 0 && p.segs[0] != "**" {
		p.segs = append([]string{"**"}, p.segs...)
	}
	p.floating = p.segs
	if len(p.segs) == 0 || p.segs[0] != "**" {
		p.floating = append([]string{"**"}, p.segs...)
	}
	lowerAll := func(ss []string) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = lowerASCII(s)
		}
		return out
	}
	p.lower, p.floatingLower = lowerAll(p.segs), lowerAll(p.floating)
	for _, seg := range p.segs {
		if seg != "**" && !isGlob(seg) {
			p.need = append(p.need, seg)
		}
	}
	p.needLower = lowerAll(p.need)
	return p, ""
}

func quote(s string) string { return `"` + s + `"` }

// isGlob reports whether s has a wildcard or an escape for path.Match; a
// byte loop, since it runs for every segment of every rule a path meets.
func isGlob(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}

// base returns the directory the pattern is anchored at, or false when the
// environment does not say (no absolute Home or Cwd).
func (p *pathPattern) base(e Env) (string, bool) {
	var b string
	switch p.anchor {
	case anchorAbs:
		b = "/"
	case anchorHome:
		b = e.Home
	case anchorRoot:
		b = e.Root
		if b == "" {
			b = e.Cwd
		}
	case anchorCwd:
		b = e.Cwd
	}
	if !path.IsAbs(b) {
		return "", false
	}
	b = path.Clean(b)
	for range p.ups {
		b = path.Dir(b)
	}
	return b, true
}

// match reports whether the path x matches. Under deny (deny and ask rules)
// doubt resolves to a match: a pattern whose anchor the environment does not
// resolve matches at any depth of the filesystem, a relative x is taken
// against Env.Cwd, and letters are also compared case-insensitively. Under
// allow doubt resolves to no match.
func (p *pathPattern) match(x string, e Env, deny bool) bool {
	s, ok := newPathSubject(x, e, deny)
	return ok && p.matchSubject(&s, e, deny)
}

// pathSubject is a path prepared once for matching against many patterns:
// its segments, and for deny their ASCII lower-case form.
type pathSubject struct {
	segs, lower []string
}

// newPathSubject prepares x as match describes; false when x can never
// match.
func newPathSubject(x string, e Env, deny bool) (pathSubject, bool) {
	if x == "" || strings.IndexByte(x, 0) >= 0 && !deny {
		return pathSubject{}, false
	}
	if !path.IsAbs(x) {
		if !deny {
			return pathSubject{}, false
		}
		if path.IsAbs(e.Cwd) {
			x = e.Cwd + "/" + x
		} else {
			x = "/" + x
		}
	}
	x = path.Clean(x)
	s := pathSubject{segs: split(x)}
	if deny {
		if l := lowerASCII(x); l == x {
			s.lower = s.segs
		} else {
			s.lower = split(l)
		}
	}
	return s, true
}

// pathSubjects prepares paths for deny matching.
func pathSubjects(paths []string, e Env) []pathSubject {
	out := make([]pathSubject, 0, len(paths))
	for _, x := range paths {
		if s, ok := newPathSubject(x, e, true); ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *pathPattern) matchSubject(s *pathSubject, e Env, deny bool) bool {
	return p.hasNeeded(s, deny) && p.matchSegments(s, e, deny)
}

// matchSegments is matchSubject without the literal-segment filter.
func (p *pathPattern) matchSegments(s *pathSubject, e Env, deny bool) bool {
	segs, lower := p.segs, p.lower
	b, ok := p.base(e)
	if !ok {
		if !deny {
			return false
		}
		b = "/"
		segs, lower = p.floating, p.floatingLower
	}
	if matchSegs(segs, b, s.segs) {
		return true
	}
	return deny && matchSegs(lower, lowerASCII(b), s.lower)
}

// hasNeeded reports whether s has every literal segment the pattern needs:
// exactly, or under deny also in lower case, as matchSegs compares them.
// The pattern's base is not among its segments, so a literal of it can
// only be found in the part of s below the base: looking in all of s
// keeps every real match.
func (p *pathPattern) hasNeeded(s *pathSubject, deny bool) bool {
	need, segs := p.need, s.segs
	if deny {
		need, segs = p.needLower, s.lower
	}
	for _, n := range need {
		found := false
		for _, x := range segs {
			if x == n {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// split returns the segments of a clean absolute path.
func split(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// matchSegs reports whether the path xs lies at or below the clean
// absolute base and the pattern pat (relative to base) matches it or one of
// its ancestors below base (gitignore: what is below a matching directory
// matches).
func matchSegs(pat []string, base string, xs []string) bool {
	rest, ok := below(base, xs)
	if !ok {
		return false
	}
	if len(pat) == 0 {
		return true
	}
	var buf [2][24]bool // no allocation for paths of up to 23 segments
	m := prefixMatches(pat, rest, buf[0][:0], buf[1][:0])
	for k := 1; k <= len(rest); k++ {
		if m[k] {
			return true
		}
	}
	return false
}

// below returns xs's segments under base, or false when xs is not at or
// below it.
func below(base string, xs []string) ([]string, bool) {
	base = strings.Trim(base, "/")
	i := 0
	for base != "" {
		seg, more, _ := strings.Cut(base, "/")
		if i >= len(xs) || xs[i] != seg {
			return nil, false
		}
		i++
		base = more
	}
	return xs[i:], true
}

// prefixMatches returns m with m[k] reporting whether pat matches xs[:k]
// ("**" matches any number of segments). prev and cur are scratch space.
func prefixMatches(pat, xs []string, prev, cur []bool) []bool {
	prev = append(prev[:0], make([]bool, len(xs)+1)...)
	cur = append(cur[:0], make([]bool, len(xs)+1)...)
	prev[0] = true
	for _, seg := range pat {
		cur[0] = seg == "**" && prev[0]
		for j := 1; j <= len(xs); j++ {
			if seg == "**" {
				cur[j] = prev[j] || cur[j-1]
			} else {
				cur[j] = prev[j-1] && segMatch(seg, xs[j-1])
			}
		}
		prev, cur = cur, prev
	}
	return prev
}

func segMatch(pat, name string) bool {
	if !isGlob(pat) {
		return pat == name
	}
	ok, err := path.Match(pat, name)
	return ok && err == nil
}
