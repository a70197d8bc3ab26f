package knowledge

import (
	"strings"
)

// Fold is the one case-folding rule: ASCII letters to lower case. macOS and
// Windows file systems ignore case, so a name is judged in every case at
// once; non-ASCII bytes are left alone (no Unicode folding surprises).
func Fold(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// HasMeta reports whether s holds a glob metacharacter bash would expand.
func HasMeta(s string) bool { return strings.ContainsAny(s, "*?[") }

// GlobSupported reports whether every part of a one-component glob is
// syntax Match reads exactly as bash does: *, ?, and bracket sets of plain
// ASCII characters and ranges, negated with ! or ^. POSIX classes
// ([[:alpha:]]), equivalence classes ([=a=]), collating symbols ([.a.]),
// backslashes and non-ASCII bytes inside a set are not: bash's reading of
// them depends on the locale and its options.
func GlobSupported(g string) bool {
	_, ok := match(g, "")
	return ok
}

// Match reports whether the one-component glob g matches name, both
// folded, the way bash's pathname expansion would with a C-order range
// reading (globasciiranges, bash's default), except that case is folded: a
// caller asks "may this glob pick that name?", and on a case-insensitive
// file system it may. As in bash without dotglob (which toolgate never
// lets a command set), a leading dot must be matched by a literal dot; a
// leading bracket set is taken to match one all the same. ok is false for
// syntax outside GlobSupported; callers treat that as a match.
func Match(g, name string) (matched, ok bool) {
	m, ok, _ := matchFolded(Fold(g), Fold(name))
	return m, ok
}

// MatchSteps is Match with the work it took, in steps: what a caller that
// matches many globs against many names counts against a bound. A step
// is one comparison of the glob with the name or one byte of a bracket
// set read; Match takes at most about len(g)+len(name)² steps (the
// backtracking of its last star rescans at most the rest of the name).
func MatchSteps(g, name string) (matched, ok bool, steps int) {
	return matchFolded(Fold(g), Fold(name))
}

func matchFolded(g, name string) (matched, ok bool, steps int) {
	if strings.HasPrefix(name, ".") && g != "" && g[0] != '.' && g[0] != '[' && !strings.HasPrefix(g, "\\.") {
		return false, supportedRest(g), len(g)
	}
	return matchN(g, name)
}

// match is an iterative glob matcher with single-star backtracking: linear
// in practice, quadratic at worst in the lengths, never exponential.
func match(g, s string) (bool, bool) {
	m, ok, _ := matchN(g, s)
	return m, ok
}

// matchN is match, counting its steps.
func matchN(g, s string) (_, _ bool, steps int) {
	gi, si := 0, 0
	starG, starS := -1, -1
	ok := true
	for {
		steps++
		if gi < len(g) {
			switch c := g[gi]; c {
			case '*':
				starG, starS = gi, si
				gi++
				continue
			case '?':
				if si < len(s) {
					gi++
					si++
					continue
				}
			case '[':
				end, valid := setEnd(g, gi)
				steps += max(end-gi, 0)
				if !valid {
					return false, false, steps
				}
				if end < 0 {
					// No closing bracket: bash reads [ literally.
					if si < len(s) && s[si] == '[' {
						gi++
						si++
						continue
					}
					break
				}
				if si < len(s) && inSet(g[gi+1:end], s[si]) {
					gi = end + 1
					si++
					continue
				}
			case '\\':
				// An escaped character is literal.
				if gi+1 < len(g) && si < len(s) && g[gi+1] == s[si] {
					gi += 2
					si++
					continue
				}
			default:
				if si < len(s) && s[si] == c {
					gi++
					si++
					continue
				}
			}
		} else if si == len(s) {
			return true, ok, steps
		}
		if starG < 0 || starS >= len(s) {
			// Check the rest of the pattern is supported syntax before
			// answering no: an unsupported set later on must still
			// report !ok.
			return false, supportedRest(g[gi:]), steps + len(g) - gi
		}
		starS++
		gi, si = starG+1, starS
	}
}

// supportedRest reports whether the bracket sets in g are supported.
func supportedRest(g string) bool {
	for i := 0; i < len(g); i++ {
		switch g[i] {
		case '\\':
			i++
		case '[':
			end, ok := setEnd(g, i)
			if !ok {
				return false
			}
			if end > 0 {
				i = end
			}
		}
	}
	return true
}

// setEnd returns the index of the ] closing the set opening at g[i] (-1
// when none closes it: bash reads the [ literally), and whether the set is
// supported syntax.
func setEnd(g string, i int) (int, bool) {
	j := i + 1
	if j < len(g) && (g[j] == '!' || g[j] == '^') {
		j++
	}
	if j < len(g) && g[j] == ']' {
		j++ // a leading ] is a member
	}
	for ; j < len(g); j++ {
		c := g[j]
		switch {
		case c == ']':
			return j, true
		case c == '[' && j+1 < len(g) && (g[j+1] == ':' || g[j+1] == '=' || g[j+1] == '.'):
			return 0, false
		case c == '\\' || c >= 0x80:
			return 0, false
		case c == '/':
			return -1, true // a set never spans a slash: [ is literal
		}
	}
	return -1, true
}

// inSet reports whether c is in the set body (between [ and ]).
func inSet(body string, c byte) bool {
	neg := false
	if body != "" && (body[0] == '!' || body[0] == '^') {
		neg, body = true, body[1:]
	}
	in := false
	for k := 0; k < len(body); k++ {
		lo := body[k]
		if k+2 < len(body) && body[k+1] == '-' {
			if hi := body[k+2]; lo <= c && c <= hi {
				in = true
			}
			k += 2
			continue
		}
		if lo == c {
			in = true
		}
	}
	return in != neg
}

// maxBraceWork bounds the bytes ExpandBraces reads and writes for one
// glob. Expanding {a}{a}{a}.. alternative by alternative costs the square
// of its length (each brace rebuilds the glob), and {a,b}{a,b}.. doubles
// at each brace: past the bound the glob counts as too large.
const maxBraceWork = 64 << 10

// ExpandBraces returns the alternatives of a glob's brace sets, nested ones
// included, at most limit of them (ok false beyond that, for an unclosed
// brace, or when expanding would read and write more than maxBraceWork
// bytes: callers refuse the glob). Sequence expressions ({1..9}) are not
// expanded: callers refuse them where they matter.
func ExpandBraces(g string, limit int) ([]string, bool) {
	if strings.IndexByte(g, '{') < 0 {
		return []string{g}, true
	}
	if limit <= 0 {
		return nil, false
	}
	var out []string
	work := maxBraceWork
	if !expandBraces(g, limit, &work, &out) {
		return nil, false
	}
	return out, true
}

// expandBraces appends g's alternatives to out. Each level removes a
// brace, and the work bound stops it long before its recursion is deep.
func expandBraces(g string, limit int, work *int, out *[]string) bool {
	open := strings.IndexByte(g, '{')
	if open < 0 {
		if len(*out) >= limit {
			return false
		}
		*out = append(*out, g)
		return true
	}
	if *work -= len(g); *work < 0 {
		return false
	}
	depth, end := 0, -1
	var cuts []int
	for i := open; i < len(g) && end < 0; i++ {
		switch g[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				end = i
			}
		case ',':
			if depth == 1 {
				cuts = append(cuts, i)
			}
		}
	}
	if end < 0 {
		return false
	}
	prev := open + 1
	for k := 0; k <= len(cuts); k++ {
		c := end
		if k < len(cuts) {
			c = cuts[k]
		}
		alt := g[:open] + g[prev:c] + g[end+1:]
		if *work -= len(alt); *work < 0 {
			return false
		}
		if !expandBraces(alt, limit, work, out) {
			return false
		}
		prev = c + 1
	}
	return true
}

// splitPath splits a path into components, dropping "" and ".".
func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// isRelative reports whether p is resolved against a working directory.
func isRelative(p string) bool {
	return !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") && !strings.HasPrefix(p, "$")
}

// compMatch reports whether path component c (possibly a glob) may name
// want. Unsupported glob syntax may name anything.
func compMatch(c, want string) bool {
	if c == want {
		return true
	}
	if !HasMeta(c) {
		return false
	}
	m, ok := Match(c, want)
	return m || !ok
}

// NameMatch reports whether the glob g matches the file name the way
// fnmatch(3) without flags does, which is how GNU grep matches the base
// names of what it meets against --exclude-dir and --include globs, and
// how find matches -name: '*' and '?' match any characters, a leading dot
// included, and case counts. Unlike Match, it folds nothing: it answers
// "does the program surely treat this name as matching, or surely not?",
// which a walk needs in both directions, to skip what a search skips and
// to judge what it reads.
//
// Only '*', '?' and plain ASCII characters other than '/' are read. ok is
// false for any other syntax (bracket sets, backslashes, a slash,
// non-ASCII bytes, an empty glob), and for '?' against a name with
// non-ASCII bytes, since fnmatch matches the locale's characters, not
// bytes: callers must then assume either answer.
func NameMatch(g, name string) (matched, ok bool) {
	m, ok, _ := NameMatchSteps(g, name)
	return m, ok
}

// NameMatchSteps is NameMatch with the steps it took (see MatchSteps).
func NameMatchSteps(g, name string) (matched, ok bool, steps int) {
	if g == "" {
		return false, false, 1
	}
	ascii := -1 // whether name is ASCII, once a '?' asks
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case c == '[' || c == '\\' || c == '/' || c >= 0x80:
			return false, false, i + 1
		case c == '?' && ascii < 0:
			ascii = 1
			for j := 0; j < len(name); j++ {
				if name[j] >= 0x80 {
					ascii = 0
					break
				}
			}
			steps += len(name)
		}
		if ascii == 0 {
			return false, false, steps + i + 1
		}
	}
	m, _, n := matchN(g, name)
	return m, true, steps + n + len(g)
}
