package rules

import (
	"path"
	"strings"
)

// cmdPattern is a Bash specifier compiled: a glob in which '*' matches any
// run of characters. The legacy "prefix:*" is compiled to the glob
// "prefix *", whose tail is optional.
type cmdPattern struct {
	parts, lower []string // the glob split at '*' (one part: exact), and lower-cased (ASCII)
	// short is the glob without a trailing " *" (nil when there is none):
	// "git diff *" also matches "git diff".
	short, shortLower []string
	// assigns are the leading VAR=value words the pattern spells.
	assigns string
}

// compileCmd compiles a Bash specifier; a non-empty problem says why it
// cannot be.
func compileCmd(spec string) (*cmdPattern, string) {
	if i := strings.Index(spec, ":*"); i >= 0 {
		if i != len(spec)-2 {
			return nil, `":*" is only allowed at the end (write "prefix:*" or a glob such as "git * main")`
		}
		prefix := strings.TrimSpace(spec[:i])
		if prefix == "" {
			return nil, `nothing before ":*" (write Bash or Bash(*) to match every command)`
		}
		spec = prefix + " *"
	}
	g := collapseSpace(spec)
	p := &cmdPattern{parts: strings.Split(g, "*")}
	p.lower = strings.Split(lowerASCII(g), "*")
	if s, ok := strings.CutSuffix(g, " *"); ok {
		p.short = strings.Split(s, "*")
		p.shortLower = strings.Split(lowerASCII(s), "*")
	}
	// Leading assignments the pattern spells literally (before any '*').
	words := strings.Split(p.parts[0], " ")
	for i := 0; i < len(words)-1 && isAssignment(words[i]); i++ {
		if p.assigns != "" {
			p.assigns += " "
		}
		p.assigns += words[i]
	}
	return p, ""
}

// match reports whether s matches the pattern; fold compares ASCII letters
// case-insensitively (the caller passes s lower-cased).
func (p *cmdPattern) match(s string, fold bool) bool {
	parts, short := p.parts, p.short
	if fold {
		parts, short = p.lower, p.shortLower
	}
	return globMatch(parts, s) || short != nil && globMatch(short, s)
}

// globMatch matches s against a glob split at its '*'s.
func globMatch(parts []string, s string) bool {
	if len(parts) == 1 {
		return s == parts[0]
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return true
}

// collapseSpace turns every run of white space into one space and trims the
// ends. A string with nothing to change is returned as it is.
func collapseSpace(s string) string {
	clean := true
	for i := 0; i < len(s) && clean; i++ {
		switch c := s[i]; {
		case c >= 0x80:
			// Unicode white space: strings.Fields decides.
			return strings.Join(strings.Fields(s), " ")
		case asciiSpace(c):
			clean = c == ' ' && i > 0 && i < len(s)-1 && s[i+1] != ' '
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; asciiSpace(c) {
			space = b.Len() > 0
			continue
		} else if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// lowerASCII lower-cases ASCII letters only, so byte offsets are kept.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// isAssignment reports whether a shell word is a VAR=value prefix.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// hasShellOperator reports whether s has a control operator or command
// substitution outside quotes: a simple command never does, so an allow rule
// spelling one never matches.
func hasShellOperator(s string) bool {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '\\':
			i++
		case c == '\'' || c == '"':
			quote = c
		case c == ';' || c == '`':
			return true
		case c == '|':
			if i == 0 || s[i-1] != '>' {
				return true
			}
		case c == '&':
			if i+1 < len(s) && s[i+1] == '&' {
				return true
			}
		case c == '$':
			if i+1 < len(s) && s[i+1] == '(' {
				return true
			}
		}
	}
	return false
}

// Deny and ask rules are matched against variants of each command so that
// spelling a command differently does not slip past them: white space
// collapsed, quotes and backslashes removed ("r\m", "'rm'"), leading
// assignments dropped, the command's directory dropped ("/bin/rm"), and what
// a wrapper runs ("sudo rm", "timeout 5 rm", "bash -c 'rm ...'"). Each
// variant is also compared with ASCII case folded (case-insensitive file
// systems find "RM").

// wrappers run (part of) their arguments as a command.
var wrappers = map[string]bool{
	"sudo": true, "doas": true, "su": true, "pkexec": true, "run0": true,
	"env": true, "command": true, "builtin": true, "exec": true, "eval": true,
	"nohup": true, "time": true, "nice": true, "ionice": true, "timeout": true,
	"stdbuf": true, "setsid": true, "chroot": true, "flock": true, "watch": true,
	"xargs": true, "strace": true, "ltrace": true, "unbuffer": true,
	"caffeinate": true, "busybox": true, "then": true, "do": true, "else": true,
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "fish": true,
	"parallel": true, "script": true, "systemd-run": true, "nsenter": true,
	"unshare": true, "firejail": true, "proxychains": true, "torsocks": true,
	"!": true,
}

// After a wrapper, at most maxWrapperWords words that are not options or
// assignments, and at most maxWrapperTries words in all, are tried as the
// start of the wrapped command: the work per command stays linear.
const (
	maxWrapperWords = 16
	maxWrapperTries = 64
)

// subject is one string a deny or ask rule is matched against, with its
// ASCII lower-case form.
type subject struct{ s, lower string }

// variants collects deny subjects, without duplicates.
type variants struct {
	seen map[string]bool
	list []subject
	// done are the command lines already added: pieces of a line that
	// did not parse repeat (( ( ( true ) ) ) has thousands of " ").
	done map[string]bool
}

func (v *variants) add(s, lower string) {
	if v.seen[s] {
		return
	}
	if v.seen == nil {
		v.seen = map[string]bool{}
	}
	v.seen[s] = true
	v.list = append(v.list, subject{s, lower})
}

// unquote drops quotes and backslashes; built once (a Replacer is safe for
// concurrent use, and building one per command was most of a check's
// allocations).
var unquote = strings.NewReplacer(`'`, "", `"`, "", `\`, "")

// addCommand adds the variants of one command line.
func (v *variants) addCommand(text string) {
	if v.done[text] {
		return
	}
	if v.done == nil {
		v.done = map[string]bool{}
	}
	v.done[text] = true
	v.add(text, lowerASCII(text)) // as given: what an allow rule would see
	t := collapseSpace(text)
	v.addWords(t)
	if u := collapseSpace(unquote.Replace(t)); u != t {
		v.addWords(u)
	}
}

// addWords adds t, its suffixes after assignments and wrappers, and those
// with the command's directory dropped. Suffixes share t's memory.
func (v *variants) addWords(t string) {
	lt := lowerASCII(t)
	v.add(t, lt)
	// wordAt returns the word starting at byte i and where the next one
	// starts (len(t) after the last).
	wordAt := func(i int) (string, int) {
		end := strings.IndexByte(t[i:], ' ')
		if end < 0 {
			return t[i:], len(t)
		}
		return t[i : i+end], i + end + 1
	}
	addFrom := func(i int, w string) {
		v.add(t[i:], lt[i:])
		if strings.Contains(w, "/") && !strings.HasPrefix(w, "-") {
			// The program named by its path. Options are no program:
			// their variants would cost a copy of the rest each.
			b := path.Base(w)
			v.add(b+t[i+len(w):], lowerASCII(b)+lt[i+len(w):])
		}
	}
	i := 0
	w, next := wordAt(0)
	for isAssignment(w) && next < len(t) {
		i = next
		w, next = wordAt(i)
	}
	if isAssignment(w) {
		return
	}
	addFrom(i, w)
	// What a wrapper may run starts at any later word (its options and
	// their values vary); trying every suffix covers nested wrappers too.
	if wrappers[path.Base(w)] {
		for tries, n := 0, 0; next < len(t) && n < maxWrapperWords && tries < maxWrapperTries; tries++ {
			i = next
			w, next = wordAt(i)
			addFrom(i, w)
			if !strings.HasPrefix(w, "-") && !isAssignment(w) {
				n++
			}
		}
	}
}

// eachPiece calls f with each piece of a command line that could not be
// analysed, split at every character that may end a simple command; pieces
// of blanks only are left out.
func eachPiece(raw string, f func(string)) {
	start := 0
	for i := 0; i <= len(raw); i++ {
		if i < len(raw) && strings.IndexByte(";&|\n\r()`{}<>", raw[i]) < 0 {
			continue
		}
		if p := raw[start:i]; strings.TrimLeft(p, " \t") != "" {
			f(p)
		}
		start = i + 1
	}
}
