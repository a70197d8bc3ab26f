package knowledge

import "strings"

// globSet is a fixed set of folded one-component globs, compiled so that a
// name is tested with a map lookup and plain string tests instead of a run
// of the matcher per glob: secret names are judged for every component of
// every path a check reads. It answers exactly what match would for some
// glob of the set (tested against it); a glob of any other shape is kept
// for match.
type globSet struct {
	exact    map[string]bool
	prefix   []string    // lit*
	suffix   []string    // *lit
	contains []string    // *lit*
	around   [][2]string // lit*lit
	other    []string
}

func newGlobSet(globs []string) globSet {
	s := globSet{exact: map[string]bool{}}
	for _, g := range globs {
		if strings.ContainsAny(g, "?[\\") {
			s.other = append(s.other, g)
			continue
		}
		switch n := strings.Count(g, "*"); {
		case n == 0:
			s.exact[g] = true
		case n == 1 && g[len(g)-1] == '*':
			s.prefix = append(s.prefix, g[:len(g)-1])
		case n == 1 && g[0] == '*':
			s.suffix = append(s.suffix, g[1:])
		case n == 1:
			i := strings.IndexByte(g, '*')
			s.around = append(s.around, [2]string{g[:i], g[i+1:]})
		case n == 2 && g[0] == '*' && g[len(g)-1] == '*' && len(g) > 2:
			s.contains = append(s.contains, g[1:len(g)-1])
		default:
			s.other = append(s.other, g)
		}
	}
	return s
}

// any reports whether a folded name matches some glob of the set.
func (s *globSet) any(n string) bool {
	if s.exact[n] {
		return true
	}
	for _, p := range s.prefix {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	for _, p := range s.suffix {
		if strings.HasSuffix(n, p) {
			return true
		}
	}
	for _, p := range s.contains {
		if strings.Contains(n, p) {
			return true
		}
	}
	for _, a := range s.around {
		if len(n) >= len(a[0])+len(a[1]) && strings.HasPrefix(n, a[0]) && strings.HasSuffix(n, a[1]) {
			return true
		}
	}
	for _, g := range s.other {
		if m, _ := match(g, n); m {
			return true
		}
	}
	return false
}
